"""The one `MetaData` every table is declared on, whose naming convention names their
constraints and indexes, and the schema's own tables: which code levels it serves and which
revisions built it. Both are kept (docs/domain.md, "How long rows live")."""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Column, DateTime, Integer, MetaData, SmallInteger, Table, Text

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def when(name: str, nullable: bool = False) -> Column:
    """A column holding a moment, with its time zone."""
    return Column(name, DateTime(timezone=True), nullable=nullable)


schema_compat = Table(
    "schema_compat",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("min_code_level", Integer, nullable=False),
    Column("max_code_level", Integer, nullable=False),
    when("updated_at"),
    CheckConstraint("id = 1", name="single_row"),
)

schema_migrations = Table(
    "schema_migrations",
    metadata,
    Column("revision", Text, primary_key=True),
    Column("checksum", Text, nullable=False),
    when("applied_at"),
)
