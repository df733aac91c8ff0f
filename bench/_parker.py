"""A crowd of idle workers for bench/job_api.py, in processes of their own so their CPU is not
the measuring process's: `clients` long-polling claims, each asking again when answered.
A job that arrives is completed at once and its arrival time recorded. On SIGTERM it
prints {"received": {job_id: unix_time}, "leased": {job_id: lease_until}, "empty": [unix_time],
"errors": n, "kinds": {error: n}, "lags": [[unix_time, s]]} as one JSON line.

Each client speaks HTTP/1.1 on one kept-alive connection of its own, on bare asyncio
streams: with httpx, 2,000 clients cost a process more CPU than core spent serving them,
and on a busy machine its loop ran seconds late, which the wake-ups it reported then held.
`lags` says how late this process's loop ran, so a late report can be told from a late core.

    python bench/_parker.py CORE_URL TOKENS_FILE CLIENTS WAIT_S
"""

from __future__ import annotations

import asyncio
import collections
import json
import signal
import sys
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import uvloop


class Connection:
    """One kept-alive HTTP/1.1 connection to core, opened again when it drops."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self._host, self._port, self._token = host, port, token
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self._host, self._port)
        reader, writer = self._streams
        payload = json.dumps(body).encode()
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\nAuthorization: Bearer {self._token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload
        )
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = dict(line.lower().split(": ", 1) for line in head[1:] if ": " in line)
            answer = await reader.readexactly(int(headers["content-length"]))
        except (OSError, asyncio.IncompleteReadError, KeyError):
            self.close()
            raise
        if headers.get("connection") == "close":
            self.close()
        status = int(head[0].split()[1])
        if status != 200:
            raise RuntimeError(f"HTTP {status} {answer[:80]!r}")
        return json.loads(answer)  # type: ignore[no-any-return]

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


async def park(url: str, tokens: list[str], clients: int, wait_s: float) -> None:
    received: dict[str, float] = {}
    leased: dict[str, str] = {}  # each job's lease_until: core's clock when its claim began, plus the lease
    empty: list[float] = []  # when a wait ran out with nothing: each is a claim asked again
    lags: list[tuple[float, float]] = []
    errors = 0
    kinds: collections.Counter[str] = collections.Counter()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    where = urlsplit(url)
    host, port = where.hostname or "127.0.0.1", where.port or 80

    async def one(n: int) -> None:
        nonlocal errors
        conn = Connection(host, port, tokens[n % len(tokens)])
        # The first waits are spread over (0, wait_s], as in a fleet whose workers started at
        # different times: the crowd asks again at an even rate, not all at once every wait.
        wait = wait_s * (n + 1) / clients
        while not stop.is_set():
            try:
                jobs = (await conn.post("/v1/jobs/claim", {"wait_s": wait}))["jobs"]
                wait = wait_s
                if not jobs:
                    empty.append(time.time())
                for job in jobs:
                    received[job["job_id"]] = time.time()
                    leased[job["job_id"]] = job["lease_until"]
                    body = {"token": job["token"], "receipt_id": uuid.uuid4().hex}
                    await conn.post(f"/v1/jobs/{job['job_id']}/complete", body)
            except (OSError, asyncio.IncompleteReadError, RuntimeError) as error:
                errors += 1
                kinds[f"{type(error).__name__}: {error}"[:120]] += 1
                await asyncio.sleep(0.5)
        conn.close()

    async def lag() -> None:  # how late this process's own loop runs: a late loop reports late arrivals
        while not stop.is_set():
            began = time.perf_counter()
            await asyncio.sleep(0.05)
            lags.append((time.time(), time.perf_counter() - began - 0.05))

    tasks = [asyncio.create_task(one(n)) for n in range(clients)] + [asyncio.create_task(lag())]
    print(json.dumps({"parked": clients}), flush=True)
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    said = {"received": received, "leased": leased, "empty": empty, "errors": errors, "kinds": kinds, "lags": lags}
    print(json.dumps(said), flush=True)


if __name__ == "__main__":
    core_url, tokens_file, count, wait = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    with open(tokens_file) as source:
        crowd_tokens = [line.strip() for line in source if line.strip()]
    uvloop.run(park(core_url, crowd_tokens, count, wait))
