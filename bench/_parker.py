"""A crowd of idle workers for bench/job_api.py, in a process of its own so its CPU is not
the measuring process's: `clients` long-polling claims, each asking again when answered.
A job that arrives is completed at once and its arrival time recorded. On SIGTERM it
prints {"received": {job_id: unix_time}, "errors": n} as one JSON line.

    python bench/_parker.py CORE_URL TOKENS_FILE CLIENTS WAIT_S
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
import uuid

import httpx
import uvloop


async def park(url: str, tokens: list[str], clients: int, wait_s: float) -> None:
    received: dict[str, float] = {}
    empty: list[float] = []  # when a wait ran out with nothing: each is a claim asked again
    errors = 0
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    pools = [httpx.AsyncClient(base_url=url, timeout=wait_s + 30, limits=httpx.Limits(max_connections=60))
             for _ in range(max(1, clients // 50))]

    async def one(n: int) -> None:
        nonlocal errors
        http, headers = pools[n % len(pools)], {"Authorization": f"Bearer {tokens[n % len(tokens)]}"}
        while not stop.is_set():
            try:
                answer = await http.post("/v1/jobs/claim", json={"wait_s": wait_s}, headers=headers)
                answer.raise_for_status()
                jobs = answer.json()["jobs"]
                if not jobs:
                    empty.append(time.time())
                for job in jobs:
                    received[job["job_id"]] = time.time()
                    body = {"token": job["token"], "receipt_id": uuid.uuid4().hex}
                    done = await http.post(f"/v1/jobs/{job['job_id']}/complete", json=body, headers=headers)
                    done.raise_for_status()
            except httpx.HTTPError:
                errors += 1
                await asyncio.sleep(0.5)

    tasks = [asyncio.create_task(one(n)) for n in range(clients)]
    print(json.dumps({"parked": clients}), flush=True)
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for http in pools:
        await http.aclose()
    print(json.dumps({"received": received, "empty": empty, "errors": errors}), flush=True)


if __name__ == "__main__":
    core_url, tokens_file, count, wait = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    with open(tokens_file) as source:
        crowd_tokens = [line.strip() for line in source if line.strip()]
    uvloop.run(park(core_url, crowd_tokens, count, wait))
