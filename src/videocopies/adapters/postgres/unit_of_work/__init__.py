"""The PostgreSQL unit of work, by concern:

- `session`: the transaction on a pooled connection (opening read, commit, rollback);
- `write_set`: the order of a commit's writes and their wire form (videocopies_apply and
  videocopies_load calls);
- `errors`: the database's refusals (SQLSTATEs of migration 0023) in the application's words;
- `accounts`, `orders`, `jobs`: one repository per aggregate, each with its identity map and the
  diff it writes back;
- `records`: the repositories of rows written once beside the aggregates.
"""

from videocopies.adapters.postgres.unit_of_work.session import PostgresUnitOfWork

__all__ = ["PostgresUnitOfWork"]
