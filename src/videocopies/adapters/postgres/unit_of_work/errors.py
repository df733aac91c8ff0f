"""Refusals raised inside the database, in the application's words."""

from __future__ import annotations

import psycopg

from videocopies.application.errors import Conflict, ServiceBusy
from videocopies.application.objects import SOURCE_GONE
from videocopies.domain.jobs import LeaseLossReason, LeaseLost
from videocopies.domain.shared import JobId

# Refusals raised inside the database (migration 0023), each with the key it is about as DETAIL.
LEASE_LOST, CAPACITY_FULL, SOURCE_GONE_STATE = "VCL01", "VCC01", "VCS01"


def translate(error: psycopg.Error) -> Exception:
    """Database refusals in the application's words, told apart by their SQLSTATE alone."""
    if error.sqlstate == LEASE_LOST:
        return LeaseLost(JobId(error.diag.message_detail or ""), LeaseLossReason.EXPIRED)
    if error.sqlstate == CAPACITY_FULL:
        return ServiceBusy(error.diag.message_detail or "")
    if error.sqlstate == SOURCE_GONE_STATE:
        return Conflict(SOURCE_GONE, error.diag.message_detail or "")
    if isinstance(error, psycopg.errors.UniqueViolation):
        return Conflict("row", error.diag.constraint_name or "unique")
    if isinstance(error, psycopg.errors.SerializationFailure | psycopg.errors.DeadlockDetected):
        return Conflict("transaction", error.sqlstate or "")
    return error
