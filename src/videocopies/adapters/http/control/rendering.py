"""How the panel's pages are rendered: Jinja templates with filters for times, durations and
sizes, and the headers every answer carries."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from jinja2 import Environment, PackageLoader, select_autoescape

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def environment() -> Environment:
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


def ago(now: datetime) -> Callable[[datetime | None], str]:
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
