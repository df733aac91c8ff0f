"""Blue/green for core on one machine, no lease dropped (`videocopies deploy core`).

1. Refuse at once when there is not memory for two cores side by side.
2. Start the new core on another port and wait until its `/_info` answers, on the same
   schema level as the old one (a core refuses to start on a schema outside its window).
3. Tell the old core its nodes have moved: from then on it answers their calls with the new
   core's address, which edge and the workers adopt for good.
4. Wait until every lease that was active at the switch has been renewed through the new
   core (or has finished, or run out: a dead worker's lease is not worth waiting past).
5. Only then stop the old core.

The new core keeps running after this command ends (its own session, its log in a file).

Behind a balancer (`--balancer`, two cores), no node is moved: the new core starts beside the
old one, the old one is drained at the balancer and stopped, and the new one takes its place
there (`deploy_behind_balancer`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg

from videocopies.adapters.postgres.queries import sql
from videocopies.embedded.haproxy import haproxy_admin
from videocopies.embedded.postgres import free_port
from videocopies.settings.commands import DeploySettings


class DeployRefused(Exception):
    pass


def available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise DeployRefused("cannot tell how much memory is free (no MemAvailable in /proc/meminfo)")


def resident_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def deploy_core(
    settings: DeploySettings, port: int | None, min_free_mb: float, log_path: Path | None,
    tell: Callable[[str], None] = print,
) -> None:
    """Refused (DeployRefused) before the switch, or done: the new core serves, the old one stopped."""
    database_url, token = settings.database_url, settings.node_token
    if not database_url or not token:
        raise DeployRefused("set VIDEOCOPIES_DATABASE_URL and VIDEOCOPIES_NODE_TOKEN (a control node's token)")
    old_url = settings.old_url.rstrip("/")
    old, new, new_url = _start_beside(settings, port, min_free_mb, log_path, tell)

    with psycopg.connect(database_url, autocommit=True) as conn:
        moved = httpx.post(f"{old_url}/v1/admin/moved", json={"url": new_url},
                           headers={"Authorization": f"Bearer {token}"}, timeout=10)
        if moved.status_code != 200:
            new.terminate()
            raise DeployRefused(f"the old core refused the switch ({moved.status_code}): {moved.text[:300]}")
        leases = conn.execute(sql("leases_at_switch")).fetchall()
        tell(f"nodes now go to {new_url}; waiting for {len(leases)} active leases to be renewed there")
        columns = [[row[i] for row in leases] for i in range(3)]
        deadline = time.monotonic() + settings.lease_ttl.total_seconds() + 5  # a lease not renewed by then ran out
        renewed = closed = waiting = 0
        while time.monotonic() < deadline:
            since = conn.execute(sql("leases_since_switch"), columns).fetchone() if leases else None
            renewed, closed, waiting = since or (0, 0, 0)
            if not waiting:
                break
            time.sleep(0.2)
    tell(f"{renewed} leases renewed through the new core, {closed} closed meanwhile"
         + (f", {waiting} not renewed in time (their workers are gone)" if waiting else ""))
    _stop_old(int(old.get("pid") or 0), tell)


def _start_beside(
    settings: DeploySettings, port: int | None, min_free_mb: float, log_path: Path | None,
    tell: Callable[[str], None],
) -> tuple[dict[str, Any], subprocess.Popen[bytes], str]:
    """The old core's /_info, and a new core serving beside it on the same schema, with its URL."""
    old_url = settings.old_url.rstrip("/")
    try:
        old = httpx.get(f"{old_url}/_info", timeout=10).json()
    except (httpx.HTTPError, ValueError) as error:
        raise DeployRefused(f"the running core at {old_url} does not answer /_info: {error}") from error
    if old.get("moved_to"):
        raise DeployRefused(f"the core at {old_url} has already moved to {old['moved_to']}")
    needed = max(min_free_mb, 1.5 * resident_mb(int(old.get("pid") or 0)))
    if (free := available_mb()) < needed:
        raise DeployRefused(f"only {free:.0f} MB free, a second core needs {needed:.0f} MB: not switching")

    port = port or free_port()
    new_url = f"http://{settings.host}:{port}"
    log_path = log_path or settings.work_dir / f"core-{port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        new = subprocess.Popen(
            [sys.executable, "-m", "videocopies.cli", "core"],
            env={**settings.environ, "VIDEOCOPIES_CORE_PORT": str(port)},
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    info = _wait_until_serving(new, new_url, log_path)
    if info.get("schema_revision") != old.get("schema_revision"):
        new.terminate()
        raise DeployRefused(
            f"the new core sees schema {info.get('schema_revision')}, the old one {old.get('schema_revision')}"
        )
    tell(f"new core on {new_url} (pid {new.pid}, log {log_path})")
    return old, new, new_url


def deploy_behind_balancer(
    settings: DeploySettings, admin_socket: Path, server: str, port: int | None, min_free_mb: float,
    log_path: Path | None, tell: Callable[[str], None] = print,
) -> None:
    """Two cores behind HAProxy: the new core starts beside the old one (`server`, e.g.
    cores/core1, in the balancer reached on `admin_socket`), the old one is drained there and
    stopped with SIGTERM (its parked claims answered empty, its duties handed on, its requests
    finished), and the new one put in its place. No node is moved: they all call the balancer."""
    old, _new, new_url = _start_beside(settings, port, min_free_mb, log_path, tell)
    try:
        said = haproxy_admin(admin_socket, f"set server {server} state drain")
    except OSError as error:
        raise DeployRefused(f"the balancer's admin socket {admin_socket} did not answer: {error}") from error
    if said.strip():
        raise DeployRefused(f"the balancer refused to drain {server}: {said.strip()}")
    tell(f"{server} drained at the balancer")
    _stop_old(int(old.get("pid") or 0), tell)
    host, new_port = new_url.removeprefix("http://").rsplit(":", 1)
    for command in (f"set server {server} addr {host} port {new_port}", f"set server {server} state ready"):
        said = haproxy_admin(admin_socket, command)
        if said.strip() and "changed" not in said and "no need to change" not in said:
            raise DeployRefused(f"the balancer refused `{command}`: {said.strip()}")
    tell(f"{server} now {new_url}, ready at the balancer")


def _wait_until_serving(
    new: subprocess.Popen[bytes], url: str, log_path: Path, timeout: float = 60
) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2) as client:  # one TLS context for the whole wait, not one a try
        while time.monotonic() < deadline:
            if new.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise DeployRefused(f"the new core exited ({new.returncode}) before serving:\n{tail}")
            try:
                answer = client.get(f"{url}/_info")
                if answer.status_code == 200:
                    return answer.json()
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    new.terminate()
    raise DeployRefused(f"the new core did not answer on {url} within {timeout:.0f} s (log: {log_path})")


def _stop_old(pid: int, say: Callable[[str], None]) -> None:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        say(f"the old core (pid {pid}) is not on this machine or has stopped: stop it where it runs")
        return
    if "videocopies" not in command or " core" not in command:
        say(f"pid {pid} is not a videocopies core ({command[:80]}): not stopping it")
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                break  # exited; its parent has yet to reap it
        except OSError:
            break
        time.sleep(0.1)
    say(f"old core (pid {pid}) stopped")

