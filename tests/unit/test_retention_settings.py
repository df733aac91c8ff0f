"""The pruning settings from the environment: every retention accepts 0, and a checkpoint
retention shorter than a copy may stay in the store is refused before anything runs."""

from datetime import timedelta

import pytest

from videocopies.cli import main as cli
from videocopies.domain.retention import RetentionPolicy
from videocopies.settings import pruning_from_env

ZEROS = ("VIDEOCOPIES_RETENTION_INBOX_S", "VIDEOCOPIES_RETENTION_OUTBOX_S", "VIDEOCOPIES_RETENTION_RECEIPTS_S",
         "VIDEOCOPIES_RETENTION_QUOTES_S", "VIDEOCOPIES_RETENTION_CHECKPOINTS_S", "VIDEOCOPIES_PRUNE_EVERY_S",
         "VIDEOCOPIES_PRUNE_BATCH", "VIDEOCOPIES_COPY_RETENTION_S", "VIDEOCOPIES_SOURCE_GRACE_S")


def test_the_defaults() -> None:
    assert pruning_from_env({}) == {
        "retention": RetentionPolicy(), "prune_every": timedelta(minutes=10), "prune_batch": 1000,
    }


def test_every_one_accepts_zero() -> None:
    pruning = pruning_from_env(dict.fromkeys(ZEROS, "0"))

    assert pruning == {"retention": RetentionPolicy(*(timedelta(0),) * 5), "prune_every": None, "prune_batch": None}


def test_checkpoints_kept_less_than_a_copy_may_live_are_refused() -> None:
    with pytest.raises(SystemExit, match="VIDEOCOPIES_COPY_RETENTION_S"):
        pruning_from_env({"VIDEOCOPIES_RETENTION_CHECKPOINTS_S": str(86400 + 3600 - 1)})
    with pytest.raises(SystemExit, match="VIDEOCOPIES_COPY_RETENTION_S"):
        pruning_from_env(dict.fromkeys(ZEROS[:-1], "0"))  # the source grace still 1 h

    assert pruning_from_env({"VIDEOCOPIES_RETENTION_CHECKPOINTS_S": str(86400 + 3600)})["retention"].checkpoints


def test_the_command_refuses_them_before_reaching_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIDEOCOPIES_RETENTION_CHECKPOINTS_S", "3600")

    with pytest.raises(SystemExit, match="VIDEOCOPIES_COPY_RETENTION_S"):
        cli(["--database-url", "postgresql://127.0.0.1:1/none", "db", "prune"])


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_a_retention_must_be_seconds(value: str) -> None:
    with pytest.raises(SystemExit, match="VIDEOCOPIES_RETENTION_INBOX_S"):
        pruning_from_env({"VIDEOCOPIES_RETENTION_INBOX_S": value})
