"""A worker process loads only what it uses: its peak RSS is a benchmark target (80 MiB), and
httpx with the CLI packages it pulls in, and two CA bundles, were 10 MiB of it. A worker on a
shared local store moves no file over HTTP and sends its JSON over the wire client, so it must
load none of them; a worker on signed URLs loads httpx at its first transfer, not before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "httpx", "httpcore", "h11", "anyio", "certifi", "rich", "pygments", "click",
    "fastapi", "starlette", "uvicorn", "aiohttp", "aiogram", "jinja2", "dependency_injector",
    "sqlalchemy", "alembic", "psycopg", "psycopg_pool", "boto3", "botocore", "prometheus_client",
)

BUILD_A_WORKER = f"""
import sys
import videocopies.cli
from videocopies.roles import worker
from videocopies.roles.nodes_link import core_client
from videocopies.settings.worker import WorkerNodeSettings

settings = WorkerNodeSettings.from_env()
worker.build(settings, "w1", core_client(settings.core, settings.work_dir))
print(sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r})))
"""


@pytest.mark.parametrize("shares_the_store", [True, False], ids=["local-store", "signed-urls"])
def test_a_wired_worker_has_loaded_no_web_database_or_cli_package(tmp_path: Path, shares_the_store: bool) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "VIDEOCOPIES_CORE_URL": "http://127.0.0.1:9",
        "VIDEOCOPIES_NODE_TOKEN": "token",
        "VIDEOCOPIES_WORK_DIR": str(tmp_path / "work"),
    }
    if shares_the_store:
        env["VIDEOCOPIES_STORE_DIR"] = str(tmp_path / "objects")
    loaded = subprocess.run(
        [sys.executable, "-c", BUILD_A_WORKER], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"


def test_the_quality_gate_keeps_few_resampling_matrices_however_many_crops_it_has_seen() -> None:
    """Each copy's crop window is its own: a cache of every window's matrices grew by 128 KiB a
    job for as long as a worker ran."""
    import numpy as np

    from videocopies.adapters.quality.measures import SSIM_SIDE, area_matrix, resample

    frame = np.arange(128 * 128, dtype=np.uint8).reshape(128, 128)
    for n in range(100):
        resample(frame, SSIM_SIDE, (n / 10, n / 20, 120 - n / 10, 125 - n / 30))
    assert area_matrix.cache_info().currsize <= 4
