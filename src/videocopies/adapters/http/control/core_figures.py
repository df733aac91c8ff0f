"""What only the cores know, read from each core's /metrics: the store's disk and each node's scratch use.

Each core keeps the scratch figures of the nodes that call it in memory, from the reports that
come with each worker's claim and each edge's duty request, and measures its own store's disk at
each scrape; the panel reads them there rather than core writing them to the database. With two
cores or more, each knows only the nodes that called it: the panel asks every core at once and
shows each node once, as the core that heard it last has it. /metrics needs no token for these
figures (only the money figures do). The panel never waits on a core for long, and names each
core it could not read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import httpx
from prometheus_client.parser import text_string_to_metric_families

from videocopies.application.ports import CoreAnswer, CoreUnreachable, NodeFigures, ScratchUse, StoreDisk

TIMEOUT_S = 2.0


def node_figures_from(text: str, core: str = "") -> NodeFigures:
    """One core's figures from its /metrics text (`core`: its URL)."""
    disk: dict[str, int] = {}
    scratch: dict[tuple[str, str], dict[str, int]] = {}
    heard: dict[tuple[str, str], datetime] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "videocopies_store_disk_bytes":
                disk[labels.get("what", "")] = int(sample.value)
            elif sample.name == "videocopies_scratch" and {"role", "node", "what"} <= labels.keys():
                scratch.setdefault((labels["role"], labels["node"]), {})[labels["what"]] = int(sample.value)
            elif sample.name == "videocopies_scratch_reported_unixtime" and {"role", "node"} <= labels.keys():
                heard[(labels["role"], labels["node"])] = datetime.fromtimestamp(sample.value, UTC)
    return NodeFigures(
        (CoreAnswer(core, StoreDisk(disk["total"], disk["free"]) if {"total", "free"} <= disk.keys() else None),),
        tuple(
            ScratchUse(role, node, figures.get("bytes", 0), figures.get("files", 0), core, heard.get((role, node)))
            for (role, node), figures in sorted(scratch.items())
        ),
    )


def merged(answers: Iterable[NodeFigures]) -> NodeFigures:
    """Every core's answer, and each node once: from the core that heard it last (a core that
    does not say when loses to one that does; between equals, the first core asked)."""
    answers = list(answers)
    latest: dict[tuple[str, str], ScratchUse] = {}
    for answer in answers:
        for use in answer.scratch:
            held = latest.get((use.role, use.node))
            if held is None or _later(use.heard_at, held.heard_at):
                latest[(use.role, use.node)] = use
    return NodeFigures(
        tuple(core for answer in answers for core in answer.cores),
        tuple(use for _, use in sorted(latest.items())),
    )


def _later(at: datetime | None, than: datetime | None) -> bool:
    return at is not None and (than is None or at > than)


class CoreMetricsFigures:
    """The CoreFigures port over the /metrics of every core in `core_urls`, read at once."""

    def __init__(self, core_urls: Sequence[str], timeout_s: float = TIMEOUT_S, verify: str | bool = True) -> None:
        self._cores = tuple(url.rstrip("/") for url in core_urls)
        self._timeout, self._verify = timeout_s, verify

    async def node_figures(self) -> NodeFigures:
        figures = merged(await asyncio.gather(*(self._answer(core) for core in self._cores)))
        if len(figures.unread) == len(figures.cores):
            away = "; ".join(f"{answer.core}: {answer.unreachable}" for answer in figures.unread)
            raise CoreUnreachable(away or "no core's address is set")
        return figures

    async def _answer(self, core: str) -> NodeFigures:
        """The core's figures, or the core named with why it could not be read."""
        try:
            return await self._read(core)
        except CoreUnreachable as away:
            return NodeFigures((CoreAnswer(core, unreachable=away.reason),), ())

    async def _read(self, core: str) -> NodeFigures:
        try:
            async with httpx.AsyncClient(timeout=self._timeout, verify=self._verify) as client:
                response = await client.get(core + "/metrics")
                response.raise_for_status()
        except httpx.HTTPError as error:
            raise CoreUnreachable(f"{type(error).__name__}: {error}".rstrip(": ")) from error
        try:
            return node_figures_from(response.text, core)
        except ValueError as error:
            raise CoreUnreachable(f"unreadable figures: {error}") from error
