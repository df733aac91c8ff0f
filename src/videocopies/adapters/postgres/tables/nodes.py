"""The nodes of a deployment, each with its role, scopes and token, and the duties one node at
a time performs under a renewable lease. Both are kept, and updated in place."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Table, Text, text
from sqlalchemy.dialects.postgresql import ARRAY

from videocopies.adapters.postgres.tables.schema import metadata, when

nodes = Table(
    "nodes",
    metadata,
    # A node's token is "<node_id>.<secret>"; only the secret's SHA-256 is kept.
    Column("node_id", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("scopes", ARRAY(Text), nullable=False),
    Column("secret_sha256", Text, nullable=False),
    when("created_at"),
    when("revoked_at", nullable=True),
    when("last_seen_at", nullable=True),
    Index("ix_nodes_name_live", "name", unique=True, postgresql_where=text("revoked_at IS NULL")),
)

# Duties one node at a time performs (polling Telegram), each under a renewable lease.
duty_leases = Table(
    "duty_leases",
    metadata,
    Column("duty", Text, primary_key=True),
    Column("holder", Text, nullable=False),
    Column("token", Text, nullable=False),
    when("acquired_at"),
    when("lease_until"),
    Column("term", BigInteger, nullable=False),
)
