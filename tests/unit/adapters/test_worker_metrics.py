"""Core's /metrics shows each worker's own figures as the worker last reported them with a
claim: copies made, CPU seconds (its own and FFmpeg's), resident memory, bytes moved."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from videocopies.adapters.http.metrics import CoreMetrics


async def _shown(metrics: CoreMetrics) -> dict[tuple[str, str], float]:
    text = (await metrics.render()).decode()
    return {
        (sample.name, sample.labels.get("node", "")): sample.value
        for family in text_string_to_metric_families(text) if family.name.startswith("videocopies_worker_")
        for sample in family.samples
    }


REPORT = {"scratch_used_bytes": 10, "scratch_files": 1, "copies_made": 3, "cpu_ms": 1500, "children_cpu_ms": 6250,
          "rss_bytes": 90_000_000, "downloaded_bytes": 7_000_000, "uploaded_bytes": 2_500_000}


async def test_each_workers_last_report_is_shown_under_its_name() -> None:
    metrics = CoreMetrics()
    metrics.worker_reported("w1", REPORT)
    metrics.worker_reported("w2", {**REPORT, "copies_made": 1})
    metrics.worker_reported("w1", {**REPORT, "copies_made": 4, "uploaded_bytes": 3_000_000})  # a later claim
    shown = await _shown(metrics)
    assert shown[("videocopies_worker_copies_made", "w1")] == 4
    assert shown[("videocopies_worker_copies_made", "w2")] == 1
    assert shown[("videocopies_worker_cpu_seconds", "w1")] == 7.75
    assert shown[("videocopies_worker_rss_bytes", "w1")] == 90_000_000
    assert shown[("videocopies_worker_downloaded_bytes", "w1")] == 7_000_000
    assert shown[("videocopies_worker_uploaded_bytes", "w1")] == 3_000_000
    assert metrics.scratch[("worker", "w1")] == {"bytes": 10, "files": 1}


async def test_a_worker_reporting_only_its_scratch_shows_no_other_figure() -> None:
    metrics = CoreMetrics()
    metrics.worker_reported("old", {"scratch_used_bytes": 5, "scratch_files": 1, "made_up": 9})
    assert await _shown(metrics) == {}
    assert metrics.scratch[("worker", "old")] == {"bytes": 5, "files": 1}


async def test_the_number_of_workers_shown_is_bounded() -> None:
    metrics = CoreMetrics()
    for n in range(100):
        metrics.worker_reported(f"w{n}", REPORT)
    nodes = {node for (name, node) in await _shown(metrics) if name == "videocopies_worker_copies_made"}
    assert len(nodes) == 64 and "w0" in nodes and "w99" not in nodes
