"""The schema as SQLAlchemy Core tables; alembic migrations must produce exactly this.

One module per area, each saying what its tables are for: `money`, `orders`, `jobs`, `bot`,
`objects`, `nodes`, and `schema` (the `metadata` they are all declared on, and the schema's own
tables). Importing the package declares every table on `metadata`."""

from videocopies.adapters.postgres.tables import bot, jobs, money, nodes, objects, orders
from videocopies.adapters.postgres.tables.schema import metadata

__all__ = ["bot", "jobs", "metadata", "money", "nodes", "objects", "orders"]
