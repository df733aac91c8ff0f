"""What only core knows, read from core's /metrics: the store's disk and each node's scratch use.

Core keeps the nodes' scratch figures in memory, from the reports that come with each worker's
claim and each edge's duty request, and measures its own store's disk at each scrape; the panel
reads them there rather than core writing them to the database. /metrics needs no token for
these figures (only the money figures do). The panel never waits on core for long, and shows
what it could not read.
"""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from videocopies.application.ports import CoreUnreachable, NodeFigures, ScratchUse, StoreDisk

TIMEOUT_S = 2.0


def node_figures_from(text: str) -> NodeFigures:
    disk: dict[str, int] = {}
    scratch: dict[tuple[str, str], dict[str, int]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "videocopies_store_disk_bytes":
                disk[labels.get("what", "")] = int(sample.value)
            elif sample.name == "videocopies_scratch" and {"role", "node", "what"} <= labels.keys():
                scratch.setdefault((labels["role"], labels["node"]), {})[labels["what"]] = int(sample.value)
    return NodeFigures(
        StoreDisk(disk["total"], disk["free"]) if {"total", "free"} <= disk.keys() else None,
        tuple(
            ScratchUse(role, node, figures.get("bytes", 0), figures.get("files", 0))
            for (role, node), figures in sorted(scratch.items())
        ),
    )


class CoreMetricsFigures:
    """The CoreFigures port over core's /metrics at `core_url`."""

    def __init__(self, core_url: str, timeout_s: float = TIMEOUT_S, verify: str | bool = True) -> None:
        self._url, self._timeout, self._verify = core_url.rstrip("/") + "/metrics", timeout_s, verify

    async def node_figures(self) -> NodeFigures:
        try:
            async with httpx.AsyncClient(timeout=self._timeout, verify=self._verify) as client:
                response = await client.get(self._url)
                response.raise_for_status()
        except httpx.HTTPError as error:
            raise CoreUnreachable(f"{type(error).__name__}: {error}".rstrip(": ")) from error
        try:
            return node_figures_from(response.text)
        except ValueError as error:
            raise CoreUnreachable(f"unreadable figures: {error}") from error
