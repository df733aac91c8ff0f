"""Each role's settings from the environment: the defaults operators rely on, and a bad value
stops the process with a line that names the variable."""

from datetime import timedelta
from pathlib import Path

import pytest

from videocopies.settings.commands import DeploySettings, PaymentsSettings, database_url
from videocopies.settings.control import ControlSettings
from videocopies.settings.core import CoreSettings
from videocopies.settings.edge import EdgeSettings
from videocopies.settings.worker import WorkerNodeSettings

SECRET = {"VIDEOCOPIES_QUOTE_SECRET": "s" * 32}
NODE = {"VIDEOCOPIES_NODE_TOKEN": "0123abcd.secret"}
EDGE = {**NODE, "VIDEOCOPIES_BOT_TOKEN": "42:bot"}


def test_core_defaults() -> None:
    core = CoreSettings.from_env("postgresql://db/videocopies", SECRET)

    assert (core.host, core.port, core.tls, core.s3, core.store_dir) == ("127.0.0.1", 8700, None, None, None)
    assert core.database.gateways() == {
        "database_url": "postgresql://db/videocopies", "pool_size": 4, "listen_url": None, "direct": False,
        "lease_pool_size": 4, "safety_poll_s": 10.0, "wait_s": 10.0,
    }
    assert (core.outbox_max_attempts, core.relocation_hosts, core.bot.token) == (8, frozenset(), None)
    assert core.lease_sweep_s == 10.0


def test_edge_and_worker_defaults() -> None:
    edge = EdgeSettings.from_env(EDGE)
    worker = WorkerNodeSettings.from_env(NODE)

    assert (edge.core.url, edge.work_dir, edge.store_dir, edge.webhook) == (
        "http://127.0.0.1:8700", Path("var/edge"), None, None
    )
    assert (edge.scratch_bytes, edge.outbox_hold_s) == (2 << 30, 60)
    assert (edge.pacing.bot_rate, edge.pacing.chat_burst) == (30, 2)
    assert (worker.work_dir, worker.claim_wait_s, worker.retry_for_s, worker.lease_ttl_s) == (
        Path("var/work"), 20, 120, 30
    )
    assert worker.ffmpeg_memory_bytes == 4096 << 20


def test_control_and_deploy_defaults() -> None:
    control = ControlSettings.from_env({"VIDEOCOPIES_CONTROL_PASSWORD": "long enough"})
    deploy = DeploySettings.from_env({})

    assert (control.host, control.port, control.inventory) == (
        "127.0.0.1", 8800, Path("var/control/inventory.sqlite3")
    )
    assert (control.login_limits.per_address, control.login_limits.per_account) == (5, 20)
    assert (deploy.old_url, deploy.lease_ttl, deploy.database_url) == (
        "http://127.0.0.1:8700", timedelta(seconds=30), None
    )


@pytest.mark.parametrize(("read", "name", "value"), [
    (lambda env: CoreSettings.from_env("postgresql://db", {**SECRET, **env}), "VIDEOCOPIES_POOL_SIZE", "four"),
    (lambda env: CoreSettings.from_env("postgresql://db", {**SECRET, **env}), "VIDEOCOPIES_CORE_PORT", "http"),
    (lambda env: CoreSettings.from_env("postgresql://db", {**SECRET, **env}), "VIDEOCOPIES_DB_WAIT_S", "soon"),
    (lambda env: CoreSettings.from_env("postgresql://db", {**SECRET, **env}), "VIDEOCOPIES_OUTBOX_MAX_ATTEMPTS", "0"),
    (lambda env: CoreSettings.from_env("postgresql://db", {**SECRET, **env}), "VIDEOCOPIES_LEASE_TTL_S", "1m"),
    (lambda env: CoreSettings.from_env("postgresql://db", {**SECRET, **env}), "VIDEOCOPIES_ORDERS_PER_HOUR", "x"),
    (lambda env: CoreSettings.from_env("postgresql://db", {**SECRET, **env}), "VIDEOCOPIES_TLS_KEY", "key.pem"),
    (lambda env: EdgeSettings.from_env({**EDGE, **env}), "VIDEOCOPIES_EDGE_SCRATCH_MB", "2G"),
    (lambda env: EdgeSettings.from_env({**EDGE, **env}), "VIDEOCOPIES_TELEGRAM_BURST", "many"),
    (lambda env: EdgeSettings.from_env({**EDGE, **env}), "VIDEOCOPIES_TELEGRAM_REPLY_RESERVE", "99"),
    (lambda env: EdgeSettings.from_env({**EDGE, **env}), "VIDEOCOPIES_BOT_TOKEN", ""),
    (lambda env: EdgeSettings.from_env({**EDGE, "VIDEOCOPIES_WEBHOOK_URL": "https://x", **env}),
     "VIDEOCOPIES_WEBHOOK_SECRET", "short"),
    (lambda env: WorkerNodeSettings.from_env({**NODE, **env}), "VIDEOCOPIES_CLAIM_WAIT_S", "a while"),
    (lambda env: WorkerNodeSettings.from_env({**NODE, **env}), "VIDEOCOPIES_FFMPEG_MEMORY_MB", "100"),
    (lambda env: WorkerNodeSettings.from_env({**NODE, **env}), "VIDEOCOPIES_MIN_SSIM", "high"),
    (lambda env: WorkerNodeSettings.from_env({**NODE, **env}), "VIDEOCOPIES_MAX_VIDEO_S", "-1"),
    (lambda env: WorkerNodeSettings.from_env(env), "VIDEOCOPIES_NODE_TOKEN", ""),
    (lambda env: ControlSettings.from_env(env), "VIDEOCOPIES_CONTROL_PORT", "panel"),
    (lambda env: ControlSettings.from_env(env), "VIDEOCOPIES_CONTROL_LOGIN_FAILURES", "none"),
    (lambda env: DeploySettings.from_env(env), "VIDEOCOPIES_LEASE_TTL_S", "long"),
    (lambda env: PaymentsSettings.from_env({**SECRET, **env}), "VIDEOCOPIES_BOT_TOKEN", ""),
    (lambda env: database_url(None, env), "VIDEOCOPIES_DATABASE_URL", ""),
])
def test_a_bad_value_is_refused_naming_its_variable(read, name: str, value: str) -> None:
    with pytest.raises(SystemExit, match=name) as refused:
        read({name: value})

    assert isinstance(refused.value.code, str)  # a line for the operator, not a traceback


def test_the_s3_store_needs_all_its_variables() -> None:
    with pytest.raises(SystemExit, match="VIDEOCOPIES_S3_ACCESS_KEY"):
        CoreSettings.from_env("postgresql://db", {**SECRET, "VIDEOCOPIES_S3_ENDPOINT": "http://s3",
                                                  "VIDEOCOPIES_S3_BUCKET": "b"})
