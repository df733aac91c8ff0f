"""Core's figures in Prometheus' text format (`GET /metrics`).

Counters are this process's own (Prometheus adds up the cores); the queue's depth and the
inbox and outbox lag are read from the database at scrape time, so every core reports the
same truth about them. Money figures (payments, coins bought) live in a registry of their
own, `money`, shown only to a caller with a control node's "read" scope: a figure about
money belongs there, whoever adds it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from videocopies.adapters.postgres.figures import QueueFigures
from videocopies.adapters.postgres.objects import ObjectFigures

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_COPY_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)
_EDGE_NAMES = 256
_EDGE_NODES = 64
# What each worker reports with its claims (since it started), shown per worker node.
_WORKER_FIGURES = {
    "copies_made": "Copies the worker stored since it started (rate() gives its copies a minute)",
    "cpu_seconds": "CPU seconds the worker used since it started, its own and its FFmpeg children's",
    "rss_bytes": "The worker process's resident memory",
    "downloaded_bytes": "Bytes of sources the worker downloaded since it started",
    "uploaded_bytes": "Bytes of copies the worker uploaded since it started",
}


class CoreMetrics:
    def __init__(
        self, figures: Callable[[], Awaitable[QueueFigures]] | None = None,
        objects: Callable[[], Awaitable[ObjectFigures]] | None = None,
        store_disk: Callable[[], tuple[int, int]] | None = None,
    ) -> None:
        """`objects`: the store's contents by kind and state; `store_disk`: the store's disk
        (total, free bytes), for a store on a local filesystem."""
        self._figures, self._objects, self._store_disk = figures, objects, store_disk
        self._last_copy: dict[str, float] = {}  # job id -> when its claim or last copy was seen
        self.registry = CollectorRegistry()
        self.money = CollectorRegistry()
        on = {"registry": self.registry}
        self.claimed = Counter("videocopies_jobs_claimed", "Jobs handed to workers", **on)
        self.finished = Counter("videocopies_jobs_finished", "Jobs closed by a worker, by outcome", ["outcome"], **on)
        self.lease_expiries = Counter(
            "videocopies_lease_expiries", "Leases that ran out and were taken back by the sweep", **on
        )
        self.refused = Counter(
            "videocopies_refused_writes", "Writes refused for a lost lease (zombies), by reason", ["reason"], **on
        )
        self.copy_seconds = Histogram(
            "videocopies_copy_seconds",
            "Time from a job's claim or previous copy to this copy's checkpoint: rendering and upload",
            buckets=_COPY_BUCKETS, **on,
        )
        self.inbox_stored = Counter("videocopies_inbox_stored", "Telegram updates stored in the inbox", **on)
        self.outbox_sent = Counter("videocopies_outbox_sent", "Messages edge reported sent", **on)
        self.inbox_unreadable = Counter(
            "videocopies_inbox_unreadable",
            "Updates that could not be read, by class: pattern, unicode, kind, missing, extra, length, type, "
            "range, not_an_object, other; edge: edge could not read them itself", ["reason"], **on,
        )
        self.outbox_given_up = Counter(
            "videocopies_outbox_given_up",
            "Messages never sent, by why: blocked, chat_not_found, too_large, rejected, gave_up, attempts, error",
            ["why"], **on,
        )
        self.objects_deleted = Counter(
            "videocopies_objects_deleted", "Objects the lifecycle deleted from the store, by kind (source, copy, "
            "stray)", ["kind"], **on,
        )
        self.object_deletes_failed = Counter(
            "videocopies_object_deletes_failed", "Deletes the store refused (tried again next pass)", **on
        )
        self._object_count = Gauge(
            "videocopies_objects", "Objects with a row, by kind and state", ["kind", "state"], **on
        )
        self._object_bytes = Gauge(
            "videocopies_object_bytes", "Bytes of objects with a row, by kind and state", ["kind", "state"], **on
        )
        self._store_disk_gauge = Gauge(
            "videocopies_store_disk_bytes", "The local store's disk: total and free bytes", ["what"], **on
        )
        self._scratch = Gauge(
            "videocopies_scratch", "A node's scratch directory as it last reported it: bytes and files",
            ["role", "node", "what"], **on,
        )
        # A time, not an age: it is true whenever it is read, and the panel takes the latest among cores.
        self._scratch_reported = Gauge(
            "videocopies_scratch_reported_unixtime", "When this core last heard the node's scratch report (Unix time)",
            ["role", "node"], **on,
        )
        self.scratch: dict[tuple[str, str], dict[str, int]] = {}  # (role, node) -> its scratch figures
        self._worker = {
            name: Gauge(f"videocopies_worker_{name}", f"{text}, as it last reported", ["node"], **on)
            for name, text in _WORKER_FIGURES.items()
        }
        self._workers_seen: set[str] = set()
        self._edge: dict[str, Gauge] = {}
        self.edges: dict[str, dict[str, Any]] = {}  # node -> its latest counters, and when they came
        self._depth = Gauge("videocopies_queue_jobs", "Unfinished jobs, by state", ["state"], **on)
        self._inbox = Gauge("videocopies_inbox_pending", "Inbox events not yet handled", **on)
        self._inbox_lag = Gauge("videocopies_inbox_lag_seconds", "Age of the oldest unhandled event", **on)
        self._outbox = Gauge("videocopies_outbox_pending", "Messages not yet sent", **on)
        self._outbox_lag = Gauge("videocopies_outbox_lag_seconds", "Age of the oldest unsent message", **on)
        self.buttons_lapsed = Counter(
            "videocopies_buttons_lapsed", "Sent quotes whose Confirm this core's sweep gave edge to take off", **on
        )
        self._buttons_lapsing = Gauge(
            "videocopies_buttons_lapsing", "Sent quotes whose Confirm waits to be taken off at their expiry", **on
        )
        self._refused_total = Gauge(
            "videocopies_refused_writes_recorded", "Refused writes recorded in the database, all cores", **on
        )
        self._payments = Gauge(
            "videocopies_payments_credited", "Payments credited with coins, all time", registry=self.money
        )
        self._payment_coins = Gauge("videocopies_payment_coins", "Coins bought, all time", registry=self.money)
        self._scrape_failed = Gauge(
            "videocopies_figures_unavailable", "1 when the database could not be read for this scrape", **on
        )

    def jobs_claimed(self, job_ids: list[str]) -> None:
        self.claimed.inc(len(job_ids))
        now = time.monotonic()
        if len(self._last_copy) > 100_000:  # jobs claimed through one core, closed through another
            self._last_copy.clear()
        self._last_copy.update((job_id, now) for job_id in job_ids)

    def copy_recorded(self, job_id: str) -> None:
        now = time.monotonic()
        if (since := self._last_copy.get(job_id)) is not None:
            self.copy_seconds.observe(now - since)
        self._last_copy[job_id] = now

    def job_finished(self, job_id: str, outcome: str) -> None:
        self.finished.labels(outcome).inc()
        self._last_copy.pop(job_id, None)

    def edge_reported(self, node: str, stats: Mapping[str, int], at: datetime) -> None:
        """An edge's own counters, as it last reported them (shown per node)."""
        for name, value in stats.items():
            gauge = self._edge.get(name)
            if gauge is None:
                if len(self._edge) >= _EDGE_NAMES:
                    continue  # names come from edges: a bounded set of series, whatever they send
                gauge = self._edge[name] = Gauge(
                    f"videocopies_edge_{name}", f"Edge's own count of {name}, as last reported", ["node"],
                    registry=self.registry,
                )
            gauge.labels(node).set(value)
        if node in self.edges or len(self.edges) < _EDGE_NODES:
            self.edges[node] = {"at": at.isoformat(), **stats}
        if "scratch_used_bytes" in stats:
            self.scratch_reported("edge", node, stats["scratch_used_bytes"], stats.get("scratch_files", 0))

    def objects_swept(self, result: Any) -> None:
        """One pass of the object lifecycle (application.objects.SweepResult)."""
        for kind, count in result.deleted.items():
            self.objects_deleted.labels(kind).inc(count)
        self.object_deletes_failed.inc(result.failed)

    def worker_reported(self, node: str, stats: Mapping[str, int]) -> None:
        """A worker's own figures, sent with a claim: its scratch directory, and what
        _WORKER_FIGURES names (CPU comes as milliseconds, own and children's)."""
        self.scratch_reported("worker", node, stats.get("scratch_used_bytes", 0), stats.get("scratch_files", 0))
        if node not in self._workers_seen and len(self._workers_seen) >= _EDGE_NODES:
            return
        self._workers_seen.add(node)
        seconds = {}
        if "cpu_ms" in stats:
            seconds["cpu_seconds"] = (stats["cpu_ms"] + stats.get("children_cpu_ms", 0)) / 1000
        for name, gauge in self._worker.items():
            if name in stats or name in seconds:
                gauge.labels(node).set(seconds.get(name, stats.get(name, 0)))

    def scratch_reported(self, role: str, node: str, used_bytes: int, files: int) -> None:
        """A worker's or edge's scratch directory, as the node measured it."""
        if len(self.scratch) < _EDGE_NODES or (role, node) in self.scratch:
            self._scratch.labels(role, node, "bytes").set(used_bytes)
            self._scratch.labels(role, node, "files").set(files)
            self._scratch_reported.labels(role, node).set(time.time())
            self.scratch[(role, node)] = {"bytes": used_bytes, "files": files}

    async def _read_objects(self) -> None:
        if self._objects is not None:
            figures = await self._objects()
            for kind in ("source", "copy"):
                for state in ("stored", "delivered", "deleted"):
                    self._object_count.labels(kind, state).set(figures.counts.get((kind, state), 0))
                    self._object_bytes.labels(kind, state).set(figures.sizes.get((kind, state), 0))
        if self._store_disk is not None:
            total, free = self._store_disk()
            self._store_disk_gauge.labels("total").set(total)
            self._store_disk_gauge.labels("free").set(free)

    async def render(self, money: bool = False) -> bytes:
        """The figures; with `money`, the money figures too."""
        try:
            await self._read_objects()
        except Exception:  # noqa: BLE001 - the other figures still tell something
            self._scrape_failed.set(1)
        if self._figures is None:
            return self._exposed(money)
        try:
            figures = await self._figures()
        except Exception:  # noqa: BLE001 - counters still tell something while the database is away
            self._scrape_failed.set(1)
        else:
            self._scrape_failed.set(0)
            for state in ("queued", "leased", "lapsed"):
                self._depth.labels(state).set(getattr(figures, state))
            self._inbox.set(figures.inbox_pending)
            self._inbox_lag.set(figures.inbox_lag_s)
            self._outbox.set(figures.outbox_pending)
            self._outbox_lag.set(figures.outbox_lag_s)
            self._buttons_lapsing.set(figures.buttons_lapsing)
            self._refused_total.set(figures.refused_writes)
            self._payments.set(figures.payments)
            self._payment_coins.set(figures.payment_coins)
        return self._exposed(money)

    async def money_figures(self) -> dict[str, int]:
        """Payments credited and coins bought, all time (for an operator's /_info)."""
        if self._figures is None:
            return {}
        figures = await self._figures()
        return {"payments_credited": figures.payments, "payment_coins": figures.payment_coins}

    def _exposed(self, money: bool) -> bytes:
        text = generate_latest(self.registry)
        return text + generate_latest(self.money) if money else text
