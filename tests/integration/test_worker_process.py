"""The worker as a real process, talking to a real core process over HTTP only: SIGTERM
gives the job back and leaves nothing; SIGKILL after the first copy, then a restart,
renders only the missing copies with the same plans and leaves the first copy's object
untouched; with signed URLs instead of shared storage, a core restarted in the middle of
a job does not stop the job from finishing, and nothing is redone."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dependency_injector import providers

from media import make_clip
from videocopies.adapters.memory import ManualClock
from videocopies.adapters.objectstore import FilesystemObjectStore
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.runtime.launch import CoreProcess, issue_token, worker_process
from videocopies.settings import Settings

from .harness import fetch_all, wait_for

SECRET = "process-secret" * 3


async def _order(url: str, store_dir: Path, clip: Path) -> str:
    service = PostgresService(settings=Settings(quote_secret=SECRET.encode()))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 2})
    service.gateways.clock.override(providers.Object(ManualClock(datetime.now(UTC))))
    pool = service.gateways.pool()
    await pool.open(wait=True)
    try:
        key = "sources/1/clip.mp4"
        await FilesystemObjectStore(store_dir).put_file(key, clip)
        cases = service.use_cases
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(1), LotKind.START, 50, timedelta(days=1)))
        quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(1), key, 5, clip.stat().st_size))
        return await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(1), quote.quote_id, quote.token))
    finally:
        await pool.close()


def _worker(core: CoreProcess, tmp: Path, name: str, ttl_s: float = 30) -> subprocess.Popen[bytes]:
    if (core.database_url, name) not in _tokens:
        _tokens[core.database_url, name] = issue_token(core.database_url, name)
    token = _tokens[core.database_url, name]
    return worker_process(core.url, token, tmp / "work", tmp / "objects", VIDEOCOPIES_LEASE_TTL_S=str(ttl_s))


_tokens: dict[tuple[str, str], str] = {}


def _ffmpeg_children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def _processes_using(path: Path) -> list[int]:
    """Live processes whose command line mentions `path` (an FFmpeg left behind would)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(path).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return make_clip(tmp_path / "clip.mp4", seconds=6, width=540, height=960)


def test_sigterm_gives_the_job_back_and_leaves_nothing(
    pg_server: LocalPostgres, database: str, tmp_path: Path, clip: Path
) -> None:
    url = pg_server.url(database)
    asyncio.run(_order(url, tmp_path / "objects", clip))
    core = CoreProcess(url, quote_secret=SECRET)
    # The worker starts beside core: its imports take seconds, and it retries core until core answers.
    worker = _worker(core, tmp_path, "w-term")
    try:
        core.start()
        wait_for(lambda: fetch_all(url, "SELECT count(*) FROM job_checkpoints")[0][0] >= 1)
        wait_for(lambda: bool(_ffmpeg_children_of(worker.pid)), timeout=20)
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
        core.stop()
    assert worker.returncode == 0, err.decode()
    (state, attempts, error), = fetch_all(url, "SELECT state, attempts, last_error FROM jobs")
    assert (state, attempts) == ("queued", 1) and "stopped" in error
    assert _files(tmp_path / "work") == []
    assert _processes_using(tmp_path / "work") == []


def test_sigkill_then_restart_renders_only_the_missing_copies(
    pg_server: LocalPostgres, database: str, tmp_path: Path, clip: Path
) -> None:
    url = pg_server.url(database)
    order_id = asyncio.run(_order(url, tmp_path / "objects", clip))
    plans_before = fetch_all(url, "SELECT plans FROM jobs")[0][0]
    core = CoreProcess(url, quote_secret=SECRET, VIDEOCOPIES_LEASE_TTL_S="3")
    first = _worker(core, tmp_path, "w-kill", ttl_s=3)  # beside core, as above
    try:
        core.start()
        wait_for(lambda: fetch_all(url, "SELECT count(*) FROM job_checkpoints")[0][0] >= 1)
        children = _ffmpeg_children_of(first.pid)
        first.kill()
        first.wait(timeout=10)
        # FFmpeg dies with its worker instead of writing on into the directory.
        wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in children), timeout=5)
    finally:
        if first.poll() is None:
            first.kill()
    time.sleep(0.5)
    kept = {key: (tmp_path / "objects" / key).read_bytes()
            for (key,) in fetch_all(url, "SELECT object_key FROM job_checkpoints")}
    assert _files(tmp_path / "work")  # the killed worker left its directory behind
    second = _worker(core, tmp_path, "w-kill", ttl_s=3)  # same node: it cleans up after itself first
    try:
        wait_for(lambda: fetch_all(url, "SELECT state FROM orders WHERE order_id = %s", order_id)[0][0] == "done",
                  timeout=90)
    finally:
        second.send_signal(signal.SIGTERM)
        second.communicate(timeout=30)
        core.stop()
    rows = fetch_all(url, "SELECT idx, object_key FROM job_checkpoints ORDER BY idx")
    assert [idx for idx, _ in rows] == [0, 1, 2, 3, 4]
    assert all((tmp_path / "objects" / key).read_bytes() == data for key, data in kept.items())
    (plans_after, attempts), = fetch_all(url, "SELECT plans, attempts FROM jobs")
    assert plans_after == plans_before and attempts == 2
    assert _files(tmp_path / "work") == []
    assert _processes_using(tmp_path / "work") == []
