"""A private HAProxy on loopback in front of several cores, for tests and benchmarks: the
standard balancer the operations guide puts before two cores (its configuration is the one
`config_text` writes, shown in docs/operations.md).

Every core is health-checked on `/_info`; a request that cannot reach a core (refused, reset
before an answer) is sent to another one (`retries`, `option redispatch`), and a core marked
down loses its sessions at once, so a long poll parked on a dead core is answered (502) and
the node asks again. The admin socket changes a core's state (`drain`, `ready`) or address at
run time, as a deploy does."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from videocopies.embedded.local import LocalServer, LocalServerError, log_tail, process_alive, system_program

BACKEND = "cores"


def haproxy_binary() -> str:
    """VIDEOCOPIES_HAPROXY, else haproxy on PATH, else Debian's /usr/sbin/haproxy."""
    return system_program("haproxy", "VIDEOCOPIES_HAPROXY", "HAProxy")


def haproxy_admin(admin_socket: Path, command: str) -> str:
    """One command on HAProxy's admin socket (`set server cores/core1 state drain`, `show stat`)
    and what it answered (nothing, for a change it made)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(admin_socket))
        sock.sendall(command.encode() + b"\n")
        said = b""
        while chunk := sock.recv(65536):
            said += chunk
    return said.decode(errors="replace")


def server_name(index: int) -> str:
    """The name of the `index`th core (from 1) in the backend."""
    return f"core{index}"


def config_text(port: int, cores: Sequence[str], admin_socket: Path, pid_file: Path, check_ms: int = 500) -> str:
    """The balancer before `cores` (host:port each), listening on 127.0.0.1:`port`. Timeouts
    outlast a claim's long poll (20 s, answered within 35 s); a core is down after two failed
    checks and up again after two good ones."""
    servers = "".join(
        f"    server {server_name(i)} {address} check\n" for i, address in enumerate(cores, start=1)
    )
    return (
        "global\n"
        f"    pidfile {pid_file}\n"
        f"    stats socket {admin_socket} mode 600 level admin\n"
        "    maxconn 4096\n"
        "\ndefaults\n"
        "    mode http\n"
        "    timeout connect 2s\n"
        "    timeout client 75s\n"
        "    timeout server 75s\n"
        "    timeout http-keep-alive 60s\n"
        "    retries 3\n"
        "    option redispatch 1\n"
        "    retry-on conn-failure empty-response\n"
        "\nfrontend videocopies\n"
        f"    bind 127.0.0.1:{port}\n"
        f"    default_backend {BACKEND}\n"
        f"\nbackend {BACKEND}\n"
        "    balance roundrobin\n"
        "    option httpchk GET /_info\n"
        "    http-check expect status 200\n"
        f"    default-server inter {check_ms}ms fall 2 rise 2 on-marked-down shutdown-sessions\n"
        f"{servers}"
    )


class LocalHaproxy(LocalServer):
    """One private HAProxy before `cores` (host:port each); `url` is the one address nodes use."""

    def __init__(self, cores: Sequence[str], port: int | None = None, *, base_dir: Path | None = None) -> None:
        super().__init__(base_dir, port, "videocopies-haproxy-")
        self.cores = list(cores)
        self._binary = ""

    @property
    def config_path(self) -> Path:
        return self.base_dir / "haproxy.cfg"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "haproxy.log"

    @property
    def pid_path(self) -> Path:
        return self.base_dir / "haproxy.pid"

    @property
    def admin_socket(self) -> Path:
        return self.base_dir / "admin.sock"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __repr__(self) -> str:
        return f"LocalHaproxy(port={self.port}, cores={self.cores}, pid={self.pid})"

    def admin(self, command: str) -> str:
        return haproxy_admin(self.admin_socket, command)

    def set_state(self, index: int, state: str) -> None:
        """`ready`, `drain` (no new requests, those in hand finish) or `maint` for the `index`th core."""
        said = self.admin(f"set server {BACKEND}/{server_name(index)} state {state}")
        if said.strip():
            raise LocalServerError(f"haproxy refused state {state} for core {index}: {said.strip()}")

    def set_address(self, index: int, address: str) -> None:
        """Point the `index`th core at another host:port (a replacement on another port)."""
        host, port = address.rsplit(":", 1)
        said = self.admin(f"set server {BACKEND}/{server_name(index)} addr {host} port {port}")
        if "changed" not in said and "no need to change" not in said:
            raise LocalServerError(f"haproxy refused the address {address} for core {index}: {said.strip()}")

    def states(self) -> dict[str, str]:
        """Each core's status as HAProxy sees it (UP, DOWN, DRAIN, MAINT, ...)."""
        lines = self.admin("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
        return {row["svname"]: row["status"] for row in rows if row.get("pxname") == BACKEND
                and row["svname"] not in ("FRONTEND", "BACKEND")}

    def _find_programs(self) -> None:
        self._binary = haproxy_binary()

    def _prepare(self) -> None:
        self._terminate()  # a run that crashed left its haproxy behind on this directory

    def _launch(self, log_start: int) -> None:
        self.config_path.write_text(
            config_text(self.port, self.cores, self.admin_socket, self.pid_path)
        )
        with self.log_path.open("ab") as log:
            started = subprocess.run(
                [self._binary, "-D", "-f", str(self.config_path)], cwd=self.base_dir,
                stdout=log, stderr=log, stdin=subprocess.DEVNULL,
            )
        if started.returncode != 0:
            raise LocalServerError(
                f"haproxy failed (exit {started.returncode})\n--- tail of {self.log_path} ---\n"
                f"{log_tail(self.log_path, start=log_start)}"
            )
        self._wait_ready(log_start)

    def _wait_ready(self, log_start: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                httpx.get(f"{self.http_url}/_info", timeout=1)
                return  # any answer, even 503 while the cores start, means it listens
            time.sleep(0.02)
        raise LocalServerError(f"haproxy on port {self.port} did not answer within {timeout:.0f} s\n"
                               f"--- tail of {self.log_path} ---\n{log_tail(self.log_path, start=log_start)}")

    def _bind_failed(self, log_start: int) -> bool:
        return "cannot bind socket" in log_tail(self.log_path, lines=1000, start=log_start)

    def _launch_failed(self) -> None:
        self._terminate()

    def _halt(self) -> None:
        self._terminate()

    def _terminate(self, timeout: float = 5.0) -> None:
        pid = self.pid
        if pid is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):  # SIGTERM: HAProxy's hard stop
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + timeout
            while process_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            if not process_alive(pid):
                self.pid_path.unlink(missing_ok=True)
                return
        raise LocalServerError(f"haproxy (pid {pid}) survived SIGTERM and SIGKILL")
