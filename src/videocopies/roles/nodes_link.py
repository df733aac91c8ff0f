"""A node's client of core's API (edge, worker), from its settings."""

from __future__ import annotations

from typing import Any

from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.http.core_urls import PlainHttpRefused
from videocopies.settings.links import CoreLink


def core_client(link: CoreLink, **options: Any) -> CoreClient:
    """Exits with the reason when core's URL is refused (plain http to another host)."""
    try:
        return CoreClient(link.url, link.token, allow_plain_http=link.allow_plain_http, ca_file=link.ca_file, **options)
    except PlainHttpRefused as refused:
        raise SystemExit(f"videocopies: {refused}") from refused
