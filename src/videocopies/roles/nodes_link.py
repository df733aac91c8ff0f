"""A node's client of core's API (edge, worker), from its settings, and who core says it is."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from videocopies.adapters.http.client import CoreClient, WrongNode, identify
from videocopies.adapters.http.core_choice import MOVES_FILE
from videocopies.adapters.http.core_urls import PlainHttpRefused
from videocopies.settings.links import CoreLink


def core_client(link: CoreLink, work_dir: Path | None = None, **options: Any) -> CoreClient:
    """Exits with the reason when core's URL is refused (plain http to another host). A
    relocation the node learns is kept in its work directory (VIDEOCOPIES_WORK_DIR, else the
    role's default `work_dir`) and followed at its next start."""
    where = link.work_dir or work_dir
    moves = where / MOVES_FILE if where is not None else None
    try:
        return CoreClient(
            link.url, link.token, allow_plain_http=link.allow_plain_http, ca_file=link.ca_file, moves_file=moves,
            **options,
        )
    except PlainHttpRefused as refused:
        raise SystemExit(f"videocopies: {refused}") from refused


async def identified(core: CoreClient, role: str) -> dict[str, Any] | None:
    """Who this node is, as core knows it from the token; None, said on stderr, when the token
    is refused or belongs to another role."""
    try:
        return await identify(core, role)
    except WrongNode as refused:
        print(f"videocopies {role}: {refused}", file=sys.stderr)
        return None
