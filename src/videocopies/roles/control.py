"""The control role's composition root: the operators' panel over the working database
(read-only) and control's own server inventory (a local SQLite file). Its variables are read
by settings/control.py."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from dependency_injector import containers, providers
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
from videocopies.runtime.lifecycle import server
from videocopies.runtime.role_run import run_role
from videocopies.settings.control import ControlSettings

log = logging.getLogger("videocopies.control")


def _core_figures(settings: ControlSettings) -> CoreMetricsFigures | None:
    return CoreMetricsFigures(settings.core_urls, verify=settings.core_ca or True) if settings.core_urls else None


class ControlPanel(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=ControlSettings)
    database_url = providers.Dependency(instance_of=str)
    pool = providers.Singleton(control_pool, database_url)
    clock = providers.Singleton(SystemClock)
    services = providers.Singleton(
        ControlServices, read_model=providers.Singleton(PostgresControlReadModel, pool),
        inventory=providers.Singleton(SqliteServerInventory, settings.provided.inventory),
        sessions=providers.Singleton(PanelSessions, settings.provided.password, clock), clock=clock,
        core_url=settings.provided.core_url, login_limits=settings.provided.login_limits,
        objects=providers.Singleton(PostgresObjectRows, pool),
        core_figures=providers.Singleton(_core_figures, settings),
    )


def build(
    database_url: str, password: str, inventory: Path, core_urls: tuple[str, ...] = (),
    login_limits: LoginLimits | None = None, core_ca: str | None = None,
) -> FastAPI:
    settings = ControlSettings(password, inventory, core_urls=core_urls, core_ca=core_ca,
                               login_limits=login_limits or LoginLimits())
    return app(ControlPanel(settings=settings, database_url=database_url))


def app(panel: ControlPanel) -> FastAPI:
    """The panel's app, its database pool open while it serves."""
    served, pool = create_app(panel.services()), panel.pool()

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await pool.open(wait=True, timeout=30)
        try:
            yield
        finally:
            await pool.close()

    served.router.lifespan_context = lifespan
    return served


def main(database_url: str, host: str | None = None, port: int | None = None) -> int:
    settings = ControlSettings.from_env()
    if len(settings.password) < 8:
        print("videocopies control: set VIDEOCOPIES_CONTROL_PASSWORD (8 characters or more); "
              "the panel shows users' ledgers and is never open", file=sys.stderr)
        return 2
    try:
        migrate.check(database_url)
    except migrate.SchemaError as refused:
        print(f"videocopies control: {refused}", file=sys.stderr)
        return 2
    host, port = host or settings.host, port or settings.port
    log.info("control panel on http://%s:%d/ (inventory %s)", host, port, settings.inventory)
    run_role(server(app(ControlPanel(settings=settings, database_url=database_url)), host, port).serve())
    return 0
