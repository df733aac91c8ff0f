"""A node's client of core follows a relocation it learned before its restart: kept in
VIDEOCOPIES_WORK_DIR when that is set, else in the role's own default work directory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from videocopies.adapters.http.core_choice import MOVES_FILE
from videocopies.roles.nodes_link import core_client
from videocopies.settings.links import CoreLink

BLUE, GREEN = "http://127.0.0.1:8700", "http://127.0.0.1:8701"


def _urls(link: CoreLink, role_work_dir: Path) -> list[str]:
    client = core_client(link, role_work_dir)
    try:
        return list(client.cores.urls)
    finally:
        asyncio.run(client.close())


def test_a_relocation_kept_in_the_roles_default_work_dir_is_followed(tmp_path: Path) -> None:
    (tmp_path / MOVES_FILE).write_text(json.dumps({BLUE: GREEN}))
    assert _urls(CoreLink(url=BLUE, token="n.s"), tmp_path) == [GREEN]
    assert _urls(CoreLink(url=BLUE, token="n.s"), tmp_path / "elsewhere") == [BLUE]


def test_the_work_dir_the_link_names_comes_first(tmp_path: Path) -> None:
    named, default = tmp_path / "named", tmp_path / "default"
    named.mkdir()
    default.mkdir()
    (default / MOVES_FILE).write_text(json.dumps({BLUE: GREEN}))
    assert _urls(CoreLink(url=BLUE, token="n.s", work_dir=named), default) == [BLUE]
