"""The coin ledger's invariants as SQL: each check finds the rows that break one rule.

Run against a restored backup by `backup verify`, and by tests against any database. Read
only: one REPEATABLE READ transaction, so every check sees the same moment.
"""

from __future__ import annotations

import attrs
import psycopg

from videocopies.adapters.postgres.queries import sql

# (name, the rule in the domain's words); audit_<name> in sql/audit.sql returns the rows that
# break it
CHECKS: tuple[tuple[str, str], ...] = (
    ("lots_add_up", "every coin of a lot is in exactly one place: available, held, debited or expired"),
    (
        "reservations_add_up",
        "a reservation holds its amount less what was debited and released, and a closed one holds nothing",
    ),
    ("holds_on_own_lots", "a reservation holds coins only from existing lots of its own user"),
    ("accounts_balance", "for every account, granted = available + reserved + debited + expired"),
    (
        "orders_reserved",
        "every confirmed order reserved its total from its own user, and only confirmed orders reserve",
    ),
    ("debits_per_copy", "a reservation is debited the order's price once per delivered copy"),
    ("orders_have_jobs", "every confirmed order has its job"),
    ("payments_credited", "every payment is credited once, as a purchase lot of its coins for its user"),
)

_EXAMPLES = 5


@attrs.frozen
class Finding:
    check: str
    rule: str
    rows: int
    examples: tuple[tuple[object, ...], ...]

    def describe(self) -> str:
        shown = "; ".join(repr(row) for row in self.examples)
        return f"{self.check}: {self.rows} row(s) break '{self.rule}', e.g. {shown}"


@attrs.frozen
class LedgerAudit:
    checks: int
    findings: tuple[Finding, ...]
    accounts: int
    lots: int
    reservations: int
    orders: int
    coins_granted: int

    @property
    def sound(self) -> bool:
        return not self.findings


def audit_ledger(url: str) -> LedgerAudit:
    """Every check over one snapshot of the database at `url`, changing nothing."""
    findings = []
    with psycopg.connect(url, prepare_threshold=None, connect_timeout=10) as conn:
        conn.read_only = True
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with conn.transaction():
            for name, rule in CHECKS:
                rows = conn.execute(sql(f"audit_{name}")).fetchall()
                if rows:
                    findings.append(Finding(name, rule, len(rows), tuple(tuple(r) for r in rows[:_EXAMPLES])))
            counts = conn.execute(sql("audit_counts")).fetchone()
    assert counts is not None
    return LedgerAudit(len(CHECKS), tuple(findings), *(int(c) for c in counts))
