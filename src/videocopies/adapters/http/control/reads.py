"""What each page of the panel shows, read from the control read model (and, for storage, the
object store's tallies and core's figures) at the moment it is asked for."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Request

from videocopies.adapters.http.control.plots import bar_plot, line_plot
from videocopies.adapters.http.control.services import ControlServices
from videocopies.application.control import latency_series, minutes, throughput_series
from videocopies.application.ports import CoreUnreachable

BIGGEST_USER_ID = 2**63 - 1  # user ids are bigint; a larger one is simply nobody
LIMIT = 100
UNREADABLE_LIMIT = 50


async def overview(services: ControlServices, _request: Request) -> dict[str, Any]:
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


async def leases(services: ControlServices, _request: Request) -> dict[str, Any]:
    return {"leases": await services.read_model.leases(LIMIT)}


async def orders(services: ControlServices, _request: Request) -> dict[str, Any]:
    model = services.read_model
    in_progress, recent = await asyncio.gather(model.orders_in_progress(LIMIT), model.recent_orders(LIMIT))
    return {"in_progress": in_progress, "recent": recent}


async def payments(services: ControlServices, _request: Request) -> dict[str, Any]:
    model = services.read_model
    recent, reconciliations, unconfirmed, reversed_ = await asyncio.gather(
        model.payments(LIMIT), model.reconciliations(LIMIT), model.unconfirmed_payments(LIMIT),
        model.reversed_payments(LIMIT),
    )
    return {"payments": recent, "reconciliations": reconciliations, "unconfirmed": unconfirmed,
            "reversed": reversed_}


async def unreadable(services: ControlServices, _request: Request) -> dict[str, Any]:
    return {"unreadable": await services.read_model.unreadable(UNREADABLE_LIMIT)}


async def user(services: ControlServices, request: Request) -> dict[str, Any]:
    model = services.read_model
    user_id = int(request.path_params["user_id"])
    if user_id > BIGGEST_USER_ID:
        return {"user_id": user_id, "ledger": None, "orders": [], "payments": []}
    ledger, orders_, payments_ = await asyncio.gather(
        model.ledger(user_id), model.user_orders(user_id, LIMIT), model.payments(LIMIT, user_id)
    )
    return {"user_id": user_id, "ledger": ledger, "orders": orders_, "payments": payments_}


async def storage(services: ControlServices, _request: Request) -> dict[str, Any]:
    """The store's budget: objects and bytes by kind and state, the store's disk, and each
    worker's and edge's scratch; what could not be read is said, not left out: no core at all
    (`unreachable`), or some of the cores (among the figures' cores)."""
    objects = await services.objects.tallies() if services.objects is not None else None
    figures, unreachable = None, None
    if services.core_figures is None:
        unreachable = "no core's address is set (VIDEOCOPIES_CORE_URLS)"
    else:
        try:
            figures = await services.core_figures.node_figures()
        except CoreUnreachable as away:
            unreachable = away.reason
    return {"objects": objects, "figures": figures, "unreachable": unreachable}
