"""The work behind an order: its job, leased to one worker at a time; a checkpoint for each
copy made; the receipts that give a repeated report its stored answer; and the writes refused
to workers that had lost their lease. Jobs and refused writes are kept; checkpoints and
receipts are pruned after their retention (docs/domain.md, "How long rows live")."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from videocopies.adapters.postgres.tables.schema import metadata, when

jobs = Table(
    "jobs",
    metadata,
    Column("job_id", Text, primary_key=True),
    Column("order_id", Text, ForeignKey("orders.order_id"), nullable=False, unique=True),
    Column("state", Text, nullable=False),
    Column("plans", JSONB, nullable=False),
    Column("max_attempts", SmallInteger, nullable=False),
    Column("attempts", SmallInteger, nullable=False),
    Column("cancel_requested", Boolean, nullable=False),
    Column("worker_id", Text),
    Column("owner_token", Text),
    when("acquired_at", nullable=True),
    when("lease_until", nullable=True),
    Column("last_error", Text),
    when("created_at"),
    Column("version", Integer, nullable=False),
    Column("closed_by", Text),
    Column("source_bytes", BigInteger, nullable=False, server_default=text("0")),
    CheckConstraint("state IN ('queued', 'leased', 'done', 'failed', 'cancelled')", name="state"),
    CheckConstraint("attempts <= max_attempts", name="attempts"),
    CheckConstraint("(state = 'leased') = (owner_token IS NOT NULL AND lease_until IS NOT NULL)", name="lease"),
    # `plans` holds every plan (a list), or the seed and count they are drawn from (0030, code
    # level 13): checked by the trigger jobs_plans_form when it is written (0032), not by a CHECK
    # that every write of a job would read again.
    # The claim reads queued jobs oldest first, and the sweep reads leases by expiry.
    Index("ix_jobs_queued", "created_at", "job_id", postgresql_where=text("state = 'queued'")),
    Index("ix_jobs_leased", "lease_until", postgresql_where=text("state = 'leased'")),
    # Five copies' plans stored whole make a row of about 2.4 kB: kept inline and uncompressed (0009).
    postgresql_with={"toast_tuple_target": 4080},
)

job_checkpoints = Table(
    "job_checkpoints",
    metadata,
    Column("job_id", Text, ForeignKey("jobs.job_id"), nullable=False),
    Column("idx", SmallInteger, nullable=False),
    Column("object_key", Text, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("sha256", Text, nullable=False),
    Column("duration_s", Float, nullable=False),
    Column("width", Integer, nullable=False),
    Column("height", Integer, nullable=False),
    when("created_at"),
    Column("quality", JSONB),  # the quality gate's figures (0011)
    Column("failure", Text),  # set when the gate gave the copy up: no object was stored
    PrimaryKeyConstraint("job_id", "idx"),
    Index(None, "created_at"),  # copies and waits over the last hour, for the control panel
)

receipts = Table(
    "receipts",
    metadata,
    Column("receipt_id", Text, primary_key=True),
    Column("fingerprint", Text, nullable=False),
    Column("result", JSONB, nullable=False),
    when("created_at"),
    Index(None, "created_at"),  # pruning walks receipts oldest first (0020)
)

refused_writes = Table(
    "refused_writes",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("job_id", Text, nullable=False),
    Column("worker_id", Text),
    Column("operation", Text, nullable=False),
    Column("reason", Text, nullable=False),
    when("at"),
)
