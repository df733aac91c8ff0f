"""Alembic environment: runs on a connection handed in by videocopies.adapters.postgres.migrate."""

from alembic import context

from videocopies.adapters.postgres.migrate import record_revision
from videocopies.adapters.postgres.tables import metadata

config = context.config
connection = config.attributes["connection"]

context.configure(
    connection=connection,
    target_metadata=metadata,
    on_version_apply=record_revision,
    transaction_per_migration=False,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
