"""The control panel's FastAPI app: HTML pages rendered on the server, forms that POST and
redirect. Every page needs a session; the inventory's forms need the session's CSRF token."""

# No `from __future__ import annotations`: FastAPI reads the route annotations at runtime.

import asyncio
import math
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from videocopies.adapters.http.control.login_limits import LoginLimits, Refused
from videocopies.adapters.http.control.plots import bar_plot, line_plot
from videocopies.adapters.http.control.sessions import COOKIE, PanelSessions, Session
from videocopies.application.control import latency_series, minutes, throughput_series
from videocopies.application.inventory import SERVER_ROLES, InvalidServer, Server, ServerExists
from videocopies.application.ports import (
    Clock,
    ControlReadModel,
    CoreFigures,
    CoreUnreachable,
    ObjectTallies,
    ServerInventory,
)

MAX_FORM_BYTES = 16 * 1024
BIGGEST_USER_ID = 2**63 - 1  # user ids are bigint; a larger one is simply nobody
LIMIT = 100
UNREADABLE_LIMIT = 50
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@attrs.frozen
class ControlServices:
    read_model: ControlReadModel
    inventory: ServerInventory
    sessions: PanelSessions
    clock: Clock
    core_url: str | None = None  # linked for its /metrics; the panel never depends on it
    login_delay_s: float = 1.0  # a wrong password waits: guessing costs time
    login_limits: LoginLimits = attrs.field(factory=LoginLimits)
    objects: ObjectTallies | None = None  # the store's objects by kind and state, from their rows
    core_figures: CoreFigures | None = None  # the store's disk and the nodes' scratch, as core knows them


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("videocopies.adapters.http.control", "templates"),
        autoescape=select_autoescape(default=True),
    )
    env.filters["at"] = lambda value: value.strftime("%Y-%m-%d %H:%M:%S %Z") if value else "—"
    env.filters["seconds"] = lambda value: f"{value:.1f} s" if value is not None else "—"
    env.filters["bytes"] = _bytes
    return env


def _bytes(value: int | None) -> str:
    if value is None:
        return "—"
    size, unit = float(value), "B"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{value} B" if unit == "B" else f"{size:.1f} {unit}"


def _ago(now: datetime) -> Callable[[datetime | None], str]:
    def ago(then: datetime | None) -> str:
        if then is None:
            return "never"
        seconds = (now - then).total_seconds()
        later = seconds < 0
        seconds = abs(seconds)
        text = (f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200
                else f"{seconds / 3600:.0f} h" if seconds < 172800 else f"{seconds / 86400:.0f} days")
        return f"in {text}" if later else f"{text} ago"

    return ago


def _same_origin(request: Request) -> bool:
    """A browser names the page a POST comes from; it must be this panel."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if origin is None:
        return True  # not a browser, or one that hides it: the CSRF token still has to match
    return urlsplit(origin).netloc == request.headers.get("host")


async def _form(request: Request) -> dict[str, list[str]]:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return {}
    return parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)


def create_app(services: ControlServices) -> FastAPI:
    app = FastAPI(title="videocopies control", docs_url=None, redoc_url=None, openapi_url=None)
    env = _environment()
    sessions = services.sessions

    def render(name: str, session: Session | None, status: int = 200, **context: Any) -> HTMLResponse:
        now = services.clock.now()
        html = env.get_template(name).render(
            session=session, now=now, ago=_ago(now), core_url=services.core_url, **context
        )
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def signed_in(request: Request) -> Session | None:
        return sessions.get(request.cookies.get(COOKIE))

    def to_login() -> RedirectResponse:
        return RedirectResponse("/login", status_code=303, headers=SECURITY_HEADERS)

    def page(name: str, read: Callable[..., Awaitable[dict[str, Any]]]) -> Callable[..., Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            session = signed_in(request)
            if session is None:
                return to_login()
            return render(name, session, **await read(request))

        return handler

    async def overview(_request: Request) -> dict[str, Any]:
        model, now = services.read_model, services.clock.now()
        since = minutes(now)[0]
        depth, nodes, duties, copies, latency = await asyncio.gather(
            model.queue_depth(), model.nodes(), model.duties(),
            model.copies_per_minute(since), model.latency_per_minute(since),
        )
        throughput = throughput_series(copies, now)
        return {
            "depth": depth, "nodes": nodes, "duties": duties,
            "copies_in_hour": int(sum(p.value or 0 for p in throughput.points)),
            "throughput_plot": bar_plot(throughput, "throughput", "Copies finished per minute", "copies/min"),
            "latency_plot": line_plot(
                latency_series(latency, now), "latency", "Wait for the first copy, p50 and p95 per minute", "seconds"
            ),
        }

    async def leases(_request: Request) -> dict[str, Any]:
        return {"leases": await services.read_model.leases(LIMIT)}

    async def orders(_request: Request) -> dict[str, Any]:
        model = services.read_model
        in_progress, recent = await asyncio.gather(model.orders_in_progress(LIMIT), model.recent_orders(LIMIT))
        return {"in_progress": in_progress, "recent": recent}

    async def payments(_request: Request) -> dict[str, Any]:
        model = services.read_model
        recent, reconciliations, unconfirmed, reversed_ = await asyncio.gather(
            model.payments(LIMIT), model.reconciliations(LIMIT), model.unconfirmed_payments(LIMIT),
            model.reversed_payments(LIMIT),
        )
        return {"payments": recent, "reconciliations": reconciliations, "unconfirmed": unconfirmed,
                "reversed": reversed_}

    async def unreadable(_request: Request) -> dict[str, Any]:
        return {"unreadable": await services.read_model.unreadable(UNREADABLE_LIMIT)}

    async def user(request: Request) -> dict[str, Any]:
        model = services.read_model
        user_id = int(request.path_params["user_id"])
        if user_id > BIGGEST_USER_ID:
            return {"user_id": user_id, "ledger": None, "orders": [], "payments": []}
        ledger, orders_, payments_ = await asyncio.gather(
            model.ledger(user_id), model.user_orders(user_id, LIMIT), model.payments(LIMIT, user_id)
        )
        return {"user_id": user_id, "ledger": ledger, "orders": orders_, "payments": payments_}

    async def storage(_request: Request) -> dict[str, Any]:
        """The store's budget: objects and bytes by kind and state, the store's disk, and each
        worker's and edge's scratch; what could not be read is said, not left out."""
        objects = await services.objects.tallies() if services.objects is not None else None
        figures, unreachable = None, None
        if services.core_figures is None:
            unreachable = "core's address is not set (VIDEOCOPIES_CORE_URL)"
        else:
            try:
                figures = await services.core_figures.node_figures()
            except CoreUnreachable as away:
                unreachable = away.reason
        return {"objects": objects, "figures": figures, "unreachable": unreachable}

    async def servers_page(request: Request, error: str | None = None, status: int = 200) -> Response:
        session = signed_in(request)
        if session is None:
            return to_login()
        return render(
            "servers.html", session, status=status, servers=await services.inventory.servers(),
            roles=SERVER_ROLES, error=error,
        )

    app.add_api_route("/", page("overview.html", overview), methods=["GET"], response_class=HTMLResponse)
    app.add_api_route("/leases", page("leases.html", leases), methods=["GET"], response_class=HTMLResponse)
    app.add_api_route("/orders", page("orders.html", orders), methods=["GET"], response_class=HTMLResponse)
    app.add_api_route("/payments", page("payments.html", payments), methods=["GET"], response_class=HTMLResponse)
    app.add_api_route("/users/{user_id:int}", page("user.html", user), methods=["GET"], response_class=HTMLResponse)
    app.add_api_route("/unreadable", page("unreadable.html", unreadable), methods=["GET"],
                      response_class=HTMLResponse)

    @app.get("/unreadable.json")
    async def unreadable_json(request: Request) -> Response:
        """The same list for scripts: [{at, update_id, user_id, reason}], newest first."""
        if signed_in(request) is None:
            return to_login()
        rows = (await unreadable(request))["unreadable"]
        return JSONResponse(
            {"unreadable": [{**attrs.asdict(row), "at": row.at.isoformat()} for row in rows]},
            headers=SECURITY_HEADERS,
        )

    app.add_api_route("/storage", page("storage.html", storage), methods=["GET"], response_class=HTMLResponse)

    @app.get("/storage.json")
    async def storage_json(request: Request) -> Response:
        """The same for scripts: {objects: [{kind, state, objects, bytes}], disk: {total, free,
        used} | null, scratch: [{role, node, bytes, files}] | null, core_unreachable: str | null}."""
        if signed_in(request) is None:
            return to_login()
        read = await storage(request)
        figures = read["figures"]
        return JSONResponse({
            "objects": None if read["objects"] is None else [attrs.asdict(t) for t in read["objects"]],
            "disk": None if figures is None or figures.disk is None
            else {**attrs.asdict(figures.disk), "used": figures.disk.used},
            "scratch": None if figures is None else [attrs.asdict(s) for s in figures.scratch],
            "core_unreachable": read["unreachable"],
        }, headers=SECURITY_HEADERS)

    @app.get("/users", response_class=HTMLResponse)
    async def find_user(request: Request, user_id: str = "") -> Response:
        if signed_in(request) is None:
            return to_login()
        if user_id.strip().isdigit() and int(user_id) <= BIGGEST_USER_ID:
            return RedirectResponse(f"/users/{int(user_id)}", status_code=303)
        return render("find_user.html", signed_in(request), status=400 if user_id else 200, asked=user_id)

    @app.get("/login", response_class=HTMLResponse)
    async def login_form(request: Request) -> Response:
        return render("login.html", signed_in(request))

    @app.post("/login")
    async def login(request: Request) -> Response:
        if not _same_origin(request):
            return Response("forbidden: another origin", status_code=403)
        attempt = services.login_limits.begin(request.client.host if request.client else "")
        if isinstance(attempt, Refused):
            minutes = math.ceil(attempt.retry_after_s / 60)
            refused = render("login.html", None, status=429,
                             error=f"too many wrong passwords: try again in {minutes} min")
            refused.headers["Retry-After"] = str(attempt.retry_after_s)
            return refused
        password = (await _form(request)).get("password", [""])[0]
        session = sessions.open(password)
        if session is None:
            await asyncio.sleep(services.login_delay_s)
            return render("login.html", None, status=401, error="wrong password")
        services.login_limits.succeeded(attempt)
        response = RedirectResponse("/", status_code=303, headers=SECURITY_HEADERS)
        response.set_cookie(
            COOKIE, session.session_id, max_age=int((session.expires_at - services.clock.now()).total_seconds()),
            httponly=True, samesite="strict", secure=request.url.scheme == "https", path="/",
        )
        return response

    async def checked_form(request: Request) -> tuple[Session, dict[str, list[str]]] | Response:
        session = signed_in(request)
        if session is None:
            return Response("forbidden: sign in first", status_code=403)
        form = await _form(request)
        if not _same_origin(request) or not sessions.csrf_matches(session, form.get("csrf", [""])[0]):
            return Response("forbidden: the form is not this session's", status_code=403)
        return session, form

    @app.post("/logout")
    async def logout(request: Request) -> Response:
        checked = await checked_form(request)
        if isinstance(checked, Response):
            return checked
        sessions.close(checked[0].session_id)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    @app.get("/servers", response_class=HTMLResponse)
    async def servers(request: Request) -> Response:
        return await servers_page(request)

    @app.post("/servers")
    async def add_server(request: Request) -> Response:
        checked = await checked_form(request)
        if isinstance(checked, Response):
            return checked
        _, form = checked
        try:
            server = Server(
                form.get("host", [""])[0], tuple(form.get("roles", [])), form.get("note", [""])[0],
                added_at=services.clock.now(),
            )
            await services.inventory.add(server)
        except InvalidServer as invalid:
            return await servers_page(request, f"{invalid.field}: {invalid.reason}", status=400)
        except ServerExists as taken:
            return await servers_page(request, f"{taken.host} is already listed", status=409)
        return RedirectResponse("/servers", status_code=303)

    @app.post("/servers/remove")
    async def remove_server(request: Request) -> Response:
        checked = await checked_form(request)
        if isinstance(checked, Response):
            return checked
        await services.inventory.remove(checked[1].get("host", [""])[0])
        return RedirectResponse("/servers", status_code=303)

    return app
