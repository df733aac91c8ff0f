"""The control panel's FastAPI app: HTML pages rendered on the server, forms that POST and
redirect. Every page needs a session; the inventory's forms need the session's CSRF token."""

# No `from __future__ import annotations`: FastAPI reads the route annotations at runtime.

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from videocopies.adapters.http.control import reads
from videocopies.adapters.http.control.login_limits import Refused
from videocopies.adapters.http.control.reads import BIGGEST_USER_ID
from videocopies.adapters.http.control.rendering import SECURITY_HEADERS, ago, environment
from videocopies.adapters.http.control.services import ControlServices
from videocopies.adapters.http.control.sessions import COOKIE, Session
from videocopies.application.inventory import SERVER_ROLES, InvalidServer, Server, ServerExists
from videocopies.application.ports import NodeFigures, StoreDisk

MAX_FORM_BYTES = 16 * 1024
__all__ = ["ControlServices", "create_app"]
PAGES = (  # path, template, what it shows
    ("/", "overview.html", reads.overview), ("/leases", "leases.html", reads.leases),
    ("/orders", "orders.html", reads.orders), ("/payments", "payments.html", reads.payments),
    ("/users/{user_id:int}", "user.html", reads.user), ("/unreadable", "unreadable.html", reads.unreadable),
    ("/storage", "storage.html", reads.storage),
)


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


def _figures_json(figures: NodeFigures | None, unreachable: str | None) -> dict[str, Any]:
    """The cores' figures for /storage.json: each null when no core could be read (`unreachable` says why)."""
    if figures is None:
        return {**dict.fromkeys(("disks", "disk", "scratch", "cores")), "core_unreachable": unreachable}
    disks = [{"cores": list(cores), "disk": _disk(disk)} for disk, cores in figures.disks]
    return {
        "disks": disks, "disk": disks[0]["disk"] if len(disks) == 1 else None,
        "scratch": [{**attrs.asdict(use), "heard_at": use.heard_at and use.heard_at.isoformat()}
                    for use in figures.scratch],
        "cores": [{"core": answer.core, "unreachable": answer.unreachable} for answer in figures.cores],
        "core_unreachable": "; ".join(f"{away.core}: {away.unreachable}" for away in figures.unread) or None,
    }


def _disk(disk: StoreDisk | None) -> dict[str, int] | None:
    return None if disk is None else {**attrs.asdict(disk), "used": disk.used}


def create_app(services: ControlServices) -> FastAPI:
    app = FastAPI(title="videocopies control", docs_url=None, redoc_url=None, openapi_url=None)
    env = environment()
    sessions = services.sessions

    def render(name: str, session: Session | None, status: int = 200, **context: Any) -> HTMLResponse:
        now = services.clock.now()
        html = env.get_template(name).render(
            session=session, now=now, ago=ago(now), core_url=services.core_url, **context
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
            return render(name, session, **await read(services, request))

        return handler

    async def servers_page(request: Request, error: str | None = None, status: int = 200) -> Response:
        session = signed_in(request)
        if session is None:
            return to_login()
        return render(
            "servers.html", session, status=status, servers=await services.inventory.servers(),
            roles=SERVER_ROLES, error=error,
        )

    for path, template, read in PAGES:
        app.add_api_route(path, page(template, read), methods=["GET"], response_class=HTMLResponse)

    @app.get("/unreadable.json")
    async def unreadable_json(request: Request) -> Response:
        """The same list for scripts: [{at, update_id, user_id, reason}], newest first."""
        if signed_in(request) is None:
            return to_login()
        rows = (await reads.unreadable(services, request))["unreadable"]
        return JSONResponse(
            {"unreadable": [{**attrs.asdict(row), "at": row.at.isoformat()} for row in rows]},
            headers=SECURITY_HEADERS,
        )

    @app.get("/storage.json")
    async def storage_json(request: Request) -> Response:
        """The same for scripts: {objects: [{kind, state, objects, bytes}], disks: [{cores: [url],
        disk: {total, free, used} | null}] (one entry when the cores agree), disk: the one disk
        when they agree, else null, scratch: [{role, node, bytes, files, heard_by, heard_at}],
        cores: [{core, unreachable: str | null}] (disks, scratch and cores null when no core was
        read), core_unreachable: null when every core was read, else which were not and why}."""
        if signed_in(request) is None:
            return to_login()
        read = await reads.storage(services, request)
        return JSONResponse({
            "objects": None if read["objects"] is None else [attrs.asdict(t) for t in read["objects"]],
            **_figures_json(read["figures"], read["unreachable"]),
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
