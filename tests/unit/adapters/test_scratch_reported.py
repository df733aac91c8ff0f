"""Core's /metrics says when it last heard each node's scratch report, so that a panel reading
several cores can keep, for each node, the figures of the core that heard it last."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families

from videocopies.adapters.http.metrics import CoreMetrics


async def _heard(metrics: CoreMetrics) -> dict[tuple[str, str], float]:
    text = (await metrics.render()).decode()
    return {
        (sample.labels["role"], sample.labels["node"]): sample.value
        for family in text_string_to_metric_families(text) for sample in family.samples
        if sample.name == "videocopies_scratch_reported_unixtime"
    }


async def test_each_nodes_scratch_report_is_shown_with_when_core_heard_it() -> None:
    metrics = CoreMetrics()
    before = time.time()
    metrics.worker_reported("w1", {"scratch_used_bytes": 10, "scratch_files": 1})
    metrics.scratch_reported("edge", "e1", 5, 2)
    first = await _heard(metrics)
    assert set(first) == {("worker", "w1"), ("edge", "e1")}
    assert all(before <= at <= time.time() for at in first.values())

    time.sleep(0.01)
    metrics.worker_reported("w1", {"scratch_used_bytes": 11, "scratch_files": 1})  # a later claim
    later = await _heard(metrics)
    assert later[("worker", "w1")] > first[("worker", "w1")] and later[("edge", "e1")] == first[("edge", "e1")]


async def test_a_node_beyond_the_bound_has_no_report_time_either() -> None:
    metrics = CoreMetrics()
    for n in range(100):
        metrics.scratch_reported("worker", f"w{n}", 1, 1)
    heard = await _heard(metrics)
    assert len(heard) == 64 and ("worker", "w99") not in heard
