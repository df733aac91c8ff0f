"""The control role's composition root: the operators' panel over the working database
(read-only) and control's own server inventory (a local SQLite file).

Configuration: VIDEOCOPIES_DATABASE_URL, VIDEOCOPIES_CONTROL_PASSWORD (required: the panel
shows users' ledgers), VIDEOCOPIES_CONTROL_HOST / _PORT (127.0.0.1:8800),
VIDEOCOPIES_CONTROL_INVENTORY (var/control/inventory.sqlite3), VIDEOCOPIES_CORE_URL
(optional: linked for core's /metrics, and read from there for the storage page's store disk and
nodes' scratch; VIDEOCOPIES_CORE_CA for a core served with a private CA), and the sign-in limits: at most
VIDEOCOPIES_CONTROL_LOGIN_FAILURES wrong passwords (5) from one address and
VIDEOCOPIES_CONTROL_LOGIN_ACCOUNT_FAILURES (20) from all together in
VIDEOCOPIES_CONTROL_LOGIN_WINDOW_S (900) seconds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
import uvloop
from fastapi import FastAPI

from videocopies.adapters.http.control.app import ControlServices, create_app
from videocopies.adapters.http.control.core_figures import CoreMetricsFigures
from videocopies.adapters.http.control.login_limits import LoginLimits
from videocopies.adapters.http.control.sessions import PanelSessions
from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.control_views import PostgresControlReadModel, control_pool
from videocopies.adapters.postgres.objects import PostgresObjectRows
from videocopies.adapters.sqlite.inventory import SqliteServerInventory
from videocopies.adapters.system import SystemClock

log = logging.getLogger("videocopies.control")
DEFAULT_INVENTORY = Path("var/control/inventory.sqlite3")


def login_limits_from_env(env: dict[str, str]) -> LoginLimits:
    try:
        return LoginLimits(
            per_address=int(env.get("VIDEOCOPIES_CONTROL_LOGIN_FAILURES", "5")),
            per_account=int(env.get("VIDEOCOPIES_CONTROL_LOGIN_ACCOUNT_FAILURES", "20")),
            window_s=float(env.get("VIDEOCOPIES_CONTROL_LOGIN_WINDOW_S", "900")),
        )
    except ValueError as bad:
        raise SystemExit(
            f"videocopies control: sign-in limits are counts of 1 or more and a window in seconds: {bad}"
        ) from None


def build(
    database_url: str, password: str, inventory: Path, core_url: str | None = None,
    login_limits: LoginLimits | None = None, core_ca: str | None = None,
) -> FastAPI:
    pool = control_pool(database_url)
    clock = SystemClock()
    services = ControlServices(
        read_model=PostgresControlReadModel(pool), inventory=SqliteServerInventory(inventory),
        sessions=PanelSessions(password, clock), clock=clock, core_url=core_url,
        login_limits=login_limits or LoginLimits(), objects=PostgresObjectRows(pool),
        core_figures=CoreMetricsFigures(core_url, verify=core_ca or True) if core_url else None,
    )
    app = create_app(services)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await pool.open(wait=True, timeout=30)
        try:
            yield
        finally:
            await pool.close()

    app.router.lifespan_context = lifespan
    return app


class _Server(uvicorn.Server):
    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        if sig == signal.SIGTERM:
            # uvicorn raises a captured signal again after shutting down; SIGTERM is how an
            # operator stops control, and a clean stop exits 0.
            self._captured_signals.remove(sig)


def main(database_url: str, host: str | None = None, port: int | None = None) -> int:
    env = dict(os.environ)
    password = env.get("VIDEOCOPIES_CONTROL_PASSWORD", "")
    if len(password) < 8:
        print("videocopies control: set VIDEOCOPIES_CONTROL_PASSWORD (8 characters or more); "
              "the panel shows users' ledgers and is never open", file=sys.stderr)
        return 2
    try:
        migrate.check(database_url)
    except migrate.SchemaError as refused:
        print(f"videocopies control: {refused}", file=sys.stderr)
        return 2
    inventory = Path(env.get("VIDEOCOPIES_CONTROL_INVENTORY", str(DEFAULT_INVENTORY)))
    app = build(database_url, password, inventory, env.get("VIDEOCOPIES_CORE_URL"), login_limits_from_env(env),
                core_ca=env.get("VIDEOCOPIES_CORE_CA"))
    host = host or env.get("VIDEOCOPIES_CONTROL_HOST", "127.0.0.1")
    port = port or int(env.get("VIDEOCOPIES_CONTROL_PORT", "8800"))
    log.info("control panel on http://%s:%d/ (inventory %s)", host, port, inventory)
    config = uvicorn.Config(app, host=host, port=port, lifespan="on", log_level="warning", access_log=False,
                            loop="none")
    uvloop.run(_Server(config).serve())
    return 0
