"""Core's Job API on a real database, served by uvicorn over real HTTP: node tokens and
scopes, long-poll claims that hold no SQL while they wait, and lease writes fenced by the
worker's identity as well as its owner token."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from datetime import timedelta

import attrs
import httpx
import pytest

from videocopies.adapters.http.client import CoreClient
from videocopies.adapters.http.job_leases import HttpJobLeases
from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.nodes import PostgresNodeRegistry
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.system import SystemClock
from videocopies.application import use_cases as uc
from videocopies.application.nodes import IssuedToken, IssueNodeToken, RevokeNode
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import LeaseLossReason, LeaseLost
from videocopies.domain.objects.keys import copy_key
from videocopies.domain.pricing import Quote
from videocopies.domain.quality import MAX_MOMENTS
from videocopies.domain.shared import OwnerToken, UserId, WorkerId
from videocopies.embedded.postgres import LocalPostgres, free_port
from videocopies.roles.core import Core, build, server
from videocopies.settings import Settings


@attrs.define
class Api:
    url: str
    core: Core
    tokens: dict[str, str]
    database_url: str

    def client(self, name: str | None = None, token: str | None = None) -> httpx.AsyncClient:
        headers = {}
        if name is not None or token is not None:
            headers["Authorization"] = f"Bearer {token or self.tokens[name]}"  # type: ignore[index]
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30)

    async def order(self, user: int = 1, copies: int = 1) -> str:
        return await self.confirm(await self.quote(user, copies))

    async def quote(self, user: int = 1, copies: int = 1) -> Quote:
        """A quote of a user with coins, ready to confirm."""
        cases = self.core.container.use_cases
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(user), LotKind.START, 100, timedelta(days=1)))
        return await cases.quote_order()(uc.QuoteOrderCommand(UserId(user), f"sources/{user}/clip.mp4", copies, 10))

    async def confirm(self, quote: Quote) -> str:
        confirm = self.core.container.use_cases.confirm_order()
        return await confirm(uc.ConfirmOrderCommand(quote.user_id, quote.quote_id, quote.token))


@pytest.fixture
async def api(pg_server: LocalPostgres, database: str) -> AsyncIterator[Api]:
    url = pg_server.url(database)
    settings = Settings(quote_secret=b"api-secret" * 4, lease_ttl=timedelta(seconds=30))
    container = build(settings, url, pool_size=3, lease_pool_size=2, safety_poll_s=10.0)
    core = Core(container, store=None, schema=migrate.check(url))
    port = free_port()
    running = server(core, "127.0.0.1", port)
    serving = asyncio.create_task(running.serve())
    while not running.started:
        assert not serving.done(), serving.exception()
        await asyncio.sleep(0.01)
    issue = IssueNodeToken(core.registry, SystemClock(), secrets.token_hex)
    tokens = {name: (await issue(name, role)).token
              for name, role in [("worker-a", "worker"), ("worker-b", "worker"), ("edge-1", "edge")]}
    try:
        yield Api(f"http://127.0.0.1:{port}", core, tokens, url)
    finally:
        running.should_exit = True
        await serving


async def test_calls_without_a_valid_token_are_refused(api: Api) -> None:
    async with api.client() as anonymous, api.client(token="nope.nope") as forged:
        missing = await anonymous.post("/v1/jobs/claim", json={})
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert (await forged.post("/v1/jobs/claim", json={})).status_code == 401
    wrong_secret = api.tokens["worker-a"].split(".")[0] + ".0000"
    async with api.client(token=wrong_secret) as guessed:
        assert (await guessed.post("/v1/jobs/claim", json={})).status_code == 401
    async with api.client() as anonymous:
        assert (await anonymous.get("/_info")).status_code == 200  # health needs no token


async def test_a_node_may_call_only_what_its_role_allows(api: Api) -> None:
    async with api.client("edge-1") as edge, api.client("worker-a") as worker:
        refused = await edge.post("/v1/jobs/claim", json={})
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
        assert (await worker.post("/v1/jobs/claim", json={})).json() == {"jobs": []}
        assert (await edge.get("/v1/nodes/me")).json()["role"] == "edge"


async def test_a_revoked_token_is_refused_at_once_by_a_running_core(api: Api) -> None:
    async with api.client("worker-b") as worker:
        assert (await worker.post("/v1/jobs/claim", json={})).status_code == 200
        # Revoked by another process (an operator's command): core hears it by NOTIFY.
        pool = make_pool(api.database_url, max_size=1)
        await pool.open(wait=True)
        try:
            assert await RevokeNode(PostgresNodeRegistry(pool), SystemClock())("worker-b")
        finally:
            await pool.close()
        started = time.monotonic()
        while (status := (await worker.post("/v1/jobs/claim", json={})).status_code) == 200:
            assert time.monotonic() - started < 2.0, "core still accepts a revoked token"
            await asyncio.sleep(0.02)
        assert status == 401


async def test_a_worker_cannot_touch_another_workers_job(api: Api) -> None:
    await api.order(user=1)
    await api.order(user=2)
    async with api.client("worker-a") as a, api.client("worker-b") as b:
        (job_a,) = (await a.post("/v1/jobs/claim", json={})).json()["jobs"]
        (job_b,) = (await b.post("/v1/jobs/claim", json={})).json()["jobs"]
        target = f"/v1/jobs/{job_a['job_id']}"
        # B with its own owner token: not the lease on this job.
        own = await b.post(f"{target}/renew", json={"token": job_b["token"]})
        assert own.status_code == 409 and own.json()["reason"] == "stale_token"
        # B with A's token (leaked): still not B's job.
        for path, body in [
            ("renew", {"token": job_a["token"]}),
            ("complete", {"token": job_a["token"], "receipt_id": "r-b"}),
            ("fail", {"token": job_a["token"], "receipt_id": "r-b2", "reason": "x"}),
            ("cancel/status", {"token": job_a["token"]}),
        ]:
            stolen = await b.post(f"{target}/{path}", json=body)
            assert stolen.status_code == 403 and stolen.json()["error"] == "not_your_job", path
        renewed = await a.post(f"{target}/renew", json={"token": job_a["token"]})
        assert renewed.status_code == 200 and renewed.json()["cancel_requested"] is False
    async with api.core.pool.connection() as conn:
        cur = await conn.execute("SELECT state, attempts FROM jobs WHERE job_id = %s", [job_a["job_id"]])
        assert await cur.fetchone() == ("leased", 1)
        cur = await conn.execute("SELECT reason, count(*) FROM refused_writes GROUP BY reason ORDER BY reason")
        # Three writes refused and counted; the status read is refused but is no write.
        assert await cur.fetchall() == [("not_owner", 3), ("stale_token", 1)]


async def test_parked_claims_cost_no_sql_and_wake_when_work_arrives(api: Api) -> None:
    waiters = api.core.waiters
    async with api.client("worker-a") as worker:
        before = waiters.claims_tried
        parked = [asyncio.create_task(worker.post("/v1/jobs/claim", json={"wait_s": 10})) for _ in range(50)]
        while waiters.parked < 50:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)
        # One look found the queue empty; the other 49 parked without asking the database.
        assert waiters.claims_tried - before <= 2
        quote = await api.quote(user=7)
        started = time.monotonic()  # from the confirmation: the grant and quote before it wake nobody
        await api.confirm(quote)
        done, _ = await asyncio.wait(parked, return_when=asyncio.FIRST_COMPLETED, timeout=5)
        woke_after = time.monotonic() - started
        (first,) = done
        assert len(first.result().json()["jobs"]) == 1 and woke_after < 1.0
        await asyncio.sleep(0.2)
        assert sum(task.done() for task in parked) == 1  # one job, one claimer answered
        await api.core.waiters.stop()  # what core does on shutdown: answer the rest empty
        rest = await asyncio.gather(*parked)
        assert sum(len(r.json()["jobs"]) for r in rest) == 1


async def test_a_claim_whose_client_left_stops_waiting(api: Api) -> None:
    async with api.client("worker-a") as worker:
        leaving = asyncio.create_task(worker.post("/v1/jobs/claim", json={"wait_s": 30}))
        while api.core.waiters.parked < 1:
            await asyncio.sleep(0.01)
        leaving.cancel()
    started = time.monotonic()
    while api.core.waiters.parked:
        assert time.monotonic() - started < 2.0, "a gone client's claim is still parked"
        await asyncio.sleep(0.02)
    await api.order(user=8)
    async with api.client("worker-b") as other:
        (job,) = (await other.post("/v1/jobs/claim", json={})).json()["jobs"]
        assert job["attempt"] == 1  # nobody claimed it on the gone client's behalf


async def test_a_parked_claim_sent_again_after_its_answer_was_lost_gets_the_same_job(api: Api) -> None:
    async with api.client("worker-a") as worker:
        parked = asyncio.create_task(worker.post("/v1/jobs/claim", json={"wait_s": 10, "receipt_id": "claim-1"}))
        while api.core.waiters.parked < 1:
            await asyncio.sleep(0.01)
        await api.order(user=9)
        (job,) = (await parked).json()["jobs"]  # the answer the worker never got
        again = await worker.post("/v1/jobs/claim", json={"wait_s": 0, "receipt_id": "claim-1"})
        assert again.json()["jobs"] == [job]
        await api.order(user=10)
        (other,) = (await worker.post("/v1/jobs/claim", json={"receipt_id": "claim-2"})).json()["jobs"]
        assert other["job_id"] != job["job_id"]


async def test_checkpoint_complete_and_a_retried_completion(api: Api) -> None:
    order_id = await api.order(user=3, copies=1)
    async with api.client("worker-a") as worker:
        (job,) = (await worker.post("/v1/jobs/claim", json={"limit": 5})).json()["jobs"]
        assert [copy["index"] for copy in job["remaining"]] == [0]
        base = f"/v1/jobs/{job['job_id']}"
        artifact = {"size": 10, "sha256": "a" * 64, "duration_s": 1.0, "width": 540, "height": 960}
        elsewhere = await worker.post(f"{base}/copies/0/checkpoint",
                                      json={"token": job["token"], "object_key": "sources/3/clip.mp4", **artifact})
        assert elsewhere.status_code == 403  # only under the key issued for this lease
        key = copy_key(order_id, 0, job["token"])
        body = {"token": job["token"], "object_key": key, **artifact}
        assert (await worker.post(f"{base}/copies/0/checkpoint", json=body)).json() == {"recorded": True}
        assert (await worker.post(f"{base}/copies/0/checkpoint", json=body)).json() == {"recorded": False}
        first = await worker.post(f"{base}/complete", json={"token": job["token"], "receipt_id": "done-1"})
        again = await worker.post(f"{base}/complete", json={"token": job["token"], "receipt_id": "done-1"})
        assert first.status_code == again.status_code == 200 and first.json() == again.json()
        assert first.json()["state"] == "done"
        reused = await worker.post(f"{base}/fail", json={"token": job["token"], "receipt_id": "done-1", "reason": "x"})
        assert reused.status_code == 409
        late = await worker.post(f"{base}/renew", json={"token": job["token"]})
        assert late.status_code == 409 and late.json()["error"] == "lease_lost"


async def test_a_claim_completes_the_job_in_hand_first_and_a_refused_completion_costs_it_nothing(api: Api) -> None:
    """One call: the job completed and the next claimed in one transaction; the worker's client
    hands a refusal back as the job's own complete call would raise it, with what was claimed."""
    await api.order(user=4, copies=1)
    await api.order(user=5, copies=1)
    await api.order(user=6, copies=1)
    core = CoreClient(api.url, api.tokens["worker-a"], retry_for_s=1.0)
    leases = HttpJobLeases(core, wait_s=0.0)
    (first,) = await leases.claim(WorkerId("worker-a"), 1)
    await _checkpoint_every_copy(api, first)
    done, (second,) = await leases.complete_then_claim(first.job_id, first.token, "handover-1", 1)
    assert done == {"job_id": first.job_id, "state": "done", "copies": 1}
    await _checkpoint_every_copy(api, second)
    refused, (third,) = await leases.complete_then_claim(second.job_id, OwnerToken("stale"), "handover-2", 1)
    assert isinstance(refused, LeaseLost) and refused.reason is LeaseLossReason.STALE_TOKEN
    assert third.job_id not in (first.job_id, second.job_id)
    async with api.client("worker-a") as worker:  # the wire: the refusal as core refuses a complete call
        body = {"limit": 1, "complete": {"job_id": second.job_id, "token": "stale", "receipt_id": "handover-3"}}
        answer = (await worker.post("/v1/jobs/claim", json=body)).json()
        assert answer == {"jobs": [], "refused": {
            "status": 409, "error": "lease_lost", "detail": "the lease on this job is no longer yours",
            "reason": "stale_token",
        }}
        metrics = (await worker.get("/metrics")).text
    assert 'videocopies_refused_writes_total{reason="stale_token"} 2.0' in metrics
    # The job whose completion was refused is still its holder's to complete.
    done, nothing = await leases.complete_then_claim(second.job_id, second.token, "handover-4", 1)
    assert done["state"] == "done" and nothing == []
    await core.close()


async def _checkpoint_every_copy(api: Api, job: uc.ClaimedJob) -> None:
    async with api.client("worker-a") as worker:
        for index, _ in job.remaining:
            body = {"token": job.token, "object_key": copy_key(job.order_id, index, job.token), "size": 10,
                    "sha256": "a" * 64, "duration_s": 1.0, "width": 540, "height": 960}
            assert (await worker.post(f"/v1/jobs/{job.job_id}/copies/{index}/checkpoint", json=body)).status_code == 200


async def test_a_takeover_claim_carries_how_the_copies_made_before_it_look(api: Api) -> None:
    order_id = await api.order(user=9, copies=5)
    async with api.client("worker-a") as a, api.client("worker-b") as b:
        (job,) = (await a.post("/v1/jobs/claim", json={})).json()["jobs"]
        assert job["made"] == []
        base = f"/v1/jobs/{job['job_id']}/copies/0/checkpoint"
        body = {"token": job["token"], "object_key": copy_key(order_id, 0, job["token"]), "size": 10,
                "sha256": "a" * 64, "duration_s": 1.0, "width": 540, "height": 960}
        quality = {"ssim": 0.97, "phash_distance": 9.0, "attempt": 0}
        for wrong in ([2**64], [-1], [1] * (MAX_MOMENTS + 1)):
            refused = await a.post(base, json=body | {"quality": quality | {"fingerprint": wrong}})
            assert refused.status_code == 422, wrong
        look = [2**64 - 1, 5, 0, 1 << 40]
        kept = await a.post(base, json=body | {"quality": quality | {"fingerprint": look}})
        assert kept.json() == {"recorded": True}
        async with api.core.pool.connection() as conn:  # worker-a is gone: its lease runs out
            await conn.execute("UPDATE jobs SET lease_until = now() - interval '1 second' WHERE job_id = %s",
                               [job["job_id"]])
        (taken,) = (await b.post("/v1/jobs/claim", json={})).json()["jobs"]
    assert taken["job_id"] == job["job_id"] and taken["made"] == [{"index": 0, "fingerprint": look}]
    assert uc.ClaimedJob.from_record(taken).made_looks == ((0, tuple(look)),)


async def test_the_worker_learns_of_a_cancel_and_acknowledges_it(api: Api) -> None:
    order_id = await api.order(user=4, copies=5)
    async with api.client("worker-a") as worker:
        (job,) = (await worker.post("/v1/jobs/claim", json={})).json()["jobs"]
        base, token = f"/v1/jobs/{job['job_id']}", {"token": job["token"]}
        assert (await worker.post(f"{base}/cancel/status", json=token)).json()["cancel_requested"] is False
        await api.core.container.use_cases.cancel_order()(uc.CancelOrderCommand(UserId(4), order_id))
        assert (await worker.post(f"{base}/renew", json=token)).json()["cancel_requested"] is True
        assert (await worker.post(f"{base}/cancel/status", json=token)).json()["cancel_requested"] is True
        assert (await worker.post(f"{base}/cancel/acknowledge", json=token)).status_code == 200
    async with api.core.pool.connection() as conn:
        cur = await conn.execute("SELECT state FROM orders WHERE order_id = %s", [order_id])
        assert await cur.fetchone() == ("cancelled",)


async def test_info_reports_schema_and_active_leases(api: Api) -> None:
    await api.order(user=5)
    async with api.client("worker-a") as worker:
        await worker.post("/v1/jobs/claim", json={})
        info = (await worker.get("/_info")).json()
    assert info["schema_revision"] == max(migrate.known_checksums()) and info["code_level"] == migrate.CODE_LEVEL
    assert info["active_leases"] == 1 and info["uptime_s"] > 0


async def test_bad_requests_are_refused_with_4xx(api: Api) -> None:
    async with api.client("worker-a") as worker:
        assert (await worker.post("/v1/jobs/claim", json={"wait_s": 61})).status_code == 422
        assert (await worker.post("/v1/jobs/claim", json={"limit": 0})).status_code == 422
        assert (await worker.post("/v1/jobs/claim", json={"surprise": 1})).status_code == 422
        assert (await worker.post("/v1/jobs/x/renew", json={"token": "t"})).status_code == 404
        assert (await worker.post("/v1/jobs/x%2Fy/renew", json={"token": "t"})).status_code in (404, 422)
        assert (await worker.post("/v1/jobs/x/source/url", json={"token": "t"})).status_code == 404


def _metric(text: str, name: str) -> float:
    """A sample's value from Prometheus' text format (0 when it is absent)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


async def test_metrics_tell_claims_copies_refusals_and_the_queue(api: Api) -> None:
    order_a = await api.order(user=6, copies=1)
    await api.order(user=7, copies=1)
    await api.order(user=8, copies=1)
    async with api.client() as anyone, api.client("worker-a") as a, api.client("worker-b") as b:
        before = (await anyone.get("/metrics")).text
        assert _metric(before, 'videocopies_queue_jobs{state="queued"}') == 3
        (job,) = (await a.post("/v1/jobs/claim", json={})).json()["jobs"]
        assert job["order_id"] == order_a
        base, token = f"/v1/jobs/{job['job_id']}", job["token"]
        key = copy_key(order_a, 0, token)
        artifact = {"size": 10, "sha256": "a" * 64, "duration_s": 1.0, "width": 540, "height": 960}
        await a.post(f"{base}/copies/0/checkpoint", json={"token": token, "object_key": key, **artifact})
        await b.post(f"{base}/renew", json={"token": token})  # a stolen token: refused and counted
        await a.post(f"{base}/complete", json={"token": token, "receipt_id": "m-1"})
        await api.core.inbox_processor.turn()  # the copy's message waits in the outbox meanwhile
        after = (await anyone.get("/metrics")).text
    assert after.count("# TYPE videocopies_") >= 12
    assert _metric(after, "videocopies_jobs_claimed_total") == 1
    assert _metric(after, 'videocopies_jobs_finished_total{outcome="done"}') == 1
    assert _metric(after, 'videocopies_refused_writes_total{reason="not_owner"}') == 1
    assert _metric(after, "videocopies_refused_writes_recorded") == 1
    assert _metric(after, "videocopies_copy_seconds_count") == 1
    assert _metric(after, 'videocopies_queue_jobs{state="queued"}') == 2
    assert _metric(after, 'videocopies_queue_jobs{state="leased"}') == 0
    assert _metric(after, "videocopies_outbox_pending") >= 1 and _metric(after, "videocopies_outbox_lag_seconds") >= 0
    assert _metric(after, "videocopies_figures_unavailable") == 0
    assert "videocopies_payment" not in after  # money figures: only for a control node
    control = (await issue_control_token(api)).token
    async with api.client(token=control) as operator:
        money = (await operator.get("/metrics")).text
    assert _metric(money, "videocopies_payments_credited") == 0 and "videocopies_payment_coins" in money
    assert _metric(money, "videocopies_jobs_claimed_total") == 1


async def issue_control_token(api: Api) -> IssuedToken:
    issued = await IssueNodeToken(api.core.registry, SystemClock(), secrets.token_hex)("control-1", "control")
    await api.core.authenticator.reload()  # as its NOTIFY would
    return issued
