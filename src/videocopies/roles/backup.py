"""`videocopies backup create|verify`: an operator's backups, and the proof that one restores."""

from __future__ import annotations

import sys
from pathlib import Path

from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.backup import BackupError, Verification, create_backup, verify_backup
from videocopies.embedded.postgres import LocalServerError


def create(database_url: str, out: Path | None) -> int:
    try:
        backup = create_backup(database_url, out)
    except (migrate.SchemaError, BackupError, LocalServerError) as refused:
        print(f"videocopies backup create: {refused}", file=sys.stderr)
        return 2
    print(f"backup of database {backup.schema.database} (revision {backup.schema.revision}) written to {backup.path}")
    print(f"{backup.size} bytes, sha256 {backup.sha256}, {backup.seconds:.1f} s")
    return 0


def verify(path: Path) -> int:
    """0: restored and sound; 1: restored, but a check failed; 2: could not be restored."""
    try:
        verification = verify_backup(path)
    except (BackupError, LocalServerError) as failed:
        print(f"videocopies backup verify: {failed}", file=sys.stderr)
        return 2
    print(report(verification))
    return 0 if verification.passed else 1


def report(v: Verification) -> str:
    lines = [
        f"archive {v.path}: {v.size} bytes, sha256 {v.sha256}",
        f"scratch cluster started in {v.start_s:.1f} s, restored into it in {v.restore_s:.1f} s, "
        f"checked in {v.check_s:.1f} s; "
        f"the scratch cluster is removed ({v.scratch_dir})",
    ]
    if v.schema is not None:
        lines.append(f"schema: {v.schema.describe()}")
    lines.append(f"schema check: {'FAILED: ' + v.schema_refusal if v.schema_refusal else 'passed'}")
    if v.audit is None:
        lines.append("ledger: not checked (no schema)")
    else:
        audit = v.audit
        lines.append(
            f"ledger: {audit.accounts} accounts, {audit.lots} lots ({audit.coins_granted} coins granted), "
            f"{audit.reservations} reservations, {audit.orders} confirmed orders"
        )
        lines.append(f"ledger checks: {audit.checks - len(audit.findings)} of {audit.checks} passed")
        lines += [f"  FAILED {finding.describe()}" for finding in audit.findings]
    lines.append("backup verified" if v.passed else "backup FAILED verification")
    return "\n".join(lines)
