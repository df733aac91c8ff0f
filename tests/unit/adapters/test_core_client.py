"""The worker's HTTP client: network failures are retried with the very same request (the
same receipt id), refusals are not retried, and a lost lease is reported as LeaseLost."""

from __future__ import annotations

import json

import httpx
import pytest

from videocopies.adapters.http.client import CoreClient, CoreRefused, CoreUnreachable
from videocopies.adapters.http.job_leases import HttpJobLeases
from videocopies.domain.jobs import CopyArtifact, LeaseLossReason, LeaseLost
from videocopies.domain.quality import CopyQuality
from videocopies.domain.shared import JobId, OwnerToken, WorkerId


def _client(handler, retry_for_s: float = 30.0) -> CoreClient:  # type: ignore[no-untyped-def]
    async def no_sleep(_seconds: float) -> None:
        return None

    return CoreClient("http://core", "node.secret", retry_for_s=retry_for_s,
                      transport=httpx.MockTransport(handler), sleep=no_sleep)


async def test_a_completion_lost_on_the_network_is_sent_again_with_the_same_receipt() -> None:
    seen: list[dict[str, object]] = []

    def core(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        assert request.headers["authorization"] == "Bearer node.secret"
        if len(seen) == 1:
            raise httpx.ConnectError("core is restarting")
        if len(seen) == 2:
            return httpx.Response(503, json={"detail": "starting"})
        return httpx.Response(200, json={"job_id": "j1", "state": "done", "copies": 1})

    client = _client(core)
    answer = await HttpJobLeases(client).complete(JobId("j1"), OwnerToken("t"), "receipt-1")
    assert answer["state"] == "done"
    assert [body["receipt_id"] for body in seen] == ["receipt-1"] * 3 and client.retries == 2


async def test_a_refusal_is_not_retried() -> None:
    calls = []

    def core(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(401, json={"error": "unauthorized", "detail": "a valid node token is required"})

    with pytest.raises(CoreRefused) as refused:
        await HttpJobLeases(_client(core)).renew(JobId("j1"), OwnerToken("t"))
    assert refused.value.status == 401 and len(calls) == 1


async def test_a_lost_lease_is_reported_with_its_reason() -> None:
    def core(request: httpx.Request) -> httpx.Response:
        return httpx.Response(409, json={"error": "lease_lost", "detail": "x", "reason": "expired"})

    with pytest.raises(LeaseLost) as lost:
        await HttpJobLeases(_client(core)).renew(JobId("j1"), OwnerToken("t"))
    assert lost.value.job_id == "j1" and lost.value.reason is LeaseLossReason.EXPIRED


async def test_a_core_that_stays_away_is_reported_once_the_retry_window_closes() -> None:
    def core(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    with pytest.raises(CoreUnreachable):
        await HttpJobLeases(_client(core, retry_for_s=0.0)).renew(JobId("j1"), OwnerToken("t"))


async def test_a_core_that_moved_sends_the_node_to_the_new_one_for_good() -> None:
    hosts: list[str] = []

    def cores(request: httpx.Request) -> httpx.Response:
        hosts.append(request.url.host)
        if request.url.host == "blue":
            return httpx.Response(308, headers={"X-Videocopies-Moved": "https://green:8701"})
        return httpx.Response(200, json={"lease_until": "2026-01-01T00:00:00Z", "cancel_requested": False})

    client = _client(cores)
    client._http.base_url = httpx.URL("https://blue:8700")
    await client.call("POST", "/v1/jobs/j1/renew", {"token": "t"})
    await client.call("POST", "/v1/jobs/j1/renew", {"token": "t"})
    assert hosts == ["blue", "green", "green"] and client.base_url == "https://green:8701"


async def test_a_node_told_it_may_follows_a_move_to_plain_http() -> None:
    def cores(request: httpx.Request) -> httpx.Response:
        if request.url.host == "blue":
            return httpx.Response(308, headers={"X-Videocopies-Moved": "http://green:8701"})
        return httpx.Response(200, json={"lease_until": "2026-01-01T00:00:00Z", "cancel_requested": False})

    client = CoreClient("http://blue:8700", "node.secret", transport=httpx.MockTransport(cores), allow_plain_http=True)
    await client.call("POST", "/v1/jobs/j1/renew", {"token": "t"})
    assert client.base_url == "http://green:8701" and client.moves_refused == 0


async def test_a_redirect_without_the_core_header_is_not_followed() -> None:
    def core(request: httpx.Request) -> httpx.Response:
        return httpx.Response(308, headers={"Location": "http://elsewhere/"}, json={"detail": "moved"})

    with pytest.raises(CoreRefused):
        await _client(core).call("POST", "/v1/jobs/j1/renew", {"token": "t"})


async def test_storage_that_is_down_is_waited_out_for_a_download_and_an_upload(tmp_path) -> None:  # type: ignore[no-untyped-def]
    calls: list[str] = []

    def storage(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if len(calls) % 3 == 1:
            raise httpx.ConnectError("storage is restarting")
        if len(calls) % 3 == 2:
            return httpx.Response(503)
        return httpx.Response(200, content=b"source" if request.method == "GET" else b"")

    client = _client(storage)
    await client.download("http://s3/source", {}, tmp_path / "source")
    assert (tmp_path / "source").read_bytes() == b"source"
    await client.upload("http://s3/copy", {}, tmp_path / "source", 6)
    assert calls == ["GET"] * 3 + ["PUT"] * 3


async def test_storage_refusing_or_gone_for_too_long_fails_the_transfer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CoreRefused):
        await _client(lambda _request: httpx.Response(403)).download("http://s3/x", {}, tmp_path / "x")

    def gone(_request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("no storage")

    with pytest.raises(CoreUnreachable):
        await _client(gone, retry_for_s=0.0).download("http://s3/x", {}, tmp_path / "x")
    assert not (tmp_path / "x").exists()


async def test_renewals_carry_the_workers_figures_and_an_older_core_that_refuses_them_is_spared_them() -> None:
    bodies: list[dict[str, object]] = []

    def older_core(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if "stats" in body:  # as a core before figures on renewals answers an unknown field
            return httpx.Response(422, json={"error": "invalid_request", "detail": "stats: extra inputs"})
        return httpx.Response(200, json={"lease_until": "2026-12-02T10:00:00+00:00", "cancel_requested": False})

    leases = HttpJobLeases(_client(older_core), stats=lambda: {"copies_made": 2})
    assert await leases.renew(JobId("j1"), OwnerToken("t")) is False
    assert await leases.renew(JobId("j1"), OwnerToken("t")) is False
    assert bodies == [{"token": "t", "stats": {"copies_made": 2}}, {"token": "t"}, {"token": "t"}]


async def test_a_renewal_refused_for_another_reason_is_not_sent_again_without_figures() -> None:
    bodies: list[dict[str, object]] = []

    def core(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(401, json={"error": "unauthorized", "detail": "a valid node token is required"})

    with pytest.raises(CoreRefused):
        await HttpJobLeases(_client(core), stats=lambda: {"copies_made": 2}).renew(JobId("j1"), OwnerToken("t"))
    assert bodies == [{"token": "t", "stats": {"copies_made": 2}}]


async def test_a_checkpoint_carries_the_copys_fingerprint_and_an_older_core_that_refuses_it_is_spared_it() -> None:
    qualities: list[object] = []

    def older_core(request: httpx.Request) -> httpx.Response:
        quality = json.loads(request.content)["quality"]
        qualities.append(quality)
        if "fingerprint" in quality:  # as a core before fingerprints answers an unknown field
            return httpx.Response(422, json={"error": "invalid_request", "detail": "fingerprint: extra inputs"})
        return httpx.Response(200, json={"recorded": True})

    leases = HttpJobLeases(_client(older_core))
    quality = CopyQuality(0.97, 9.0, None, 0, (2**64 - 1, 3))
    copy = CopyArtifact("copies/o/0.mp4", 10, "a" * 64, 1.0, 540, 960, quality)
    assert await leases.checkpoint(JobId("j1"), OwnerToken("t"), 0, copy)
    assert await leases.give_up_copy(JobId("j1"), OwnerToken("t"), 1, "matches_source", quality)
    figures = {"ssim": 0.97, "phash_distance": 9.0, "min_pair_distance": None, "attempt": 0}
    assert qualities == [figures | {"fingerprint": [2**64 - 1, 3]}, figures, figures]


async def test_a_checkpoint_refused_for_another_reason_still_carries_fingerprints_after() -> None:
    qualities: list[object] = []

    def core(request: httpx.Request) -> httpx.Response:
        qualities.append(json.loads(request.content)["quality"])
        if len(qualities) <= 2:  # refused with and without the fingerprint: not the field's fault
            return httpx.Response(422, json={"error": "invalid_request", "detail": "size: too large"})
        return httpx.Response(200, json={"recorded": True})

    leases = HttpJobLeases(_client(core))
    copy = CopyArtifact("copies/o/0.mp4", 10, "a" * 64, 1.0, 540, 960, CopyQuality(0.97, 9.0, None, 0, (5,)))
    with pytest.raises(CoreRefused):
        await leases.checkpoint(JobId("j1"), OwnerToken("t"), 0, copy)
    assert await leases.checkpoint(JobId("j1"), OwnerToken("t"), 0, copy)
    assert [("fingerprint" in q) for q in qualities] == [True, False, True]  # type: ignore[operator]


async def test_a_core_older_than_completing_with_claims_gets_the_two_calls_it_knows() -> None:
    """An older core refuses the claim's `complete` field (422): the worker completes, then
    claims without waiting, and from then on does so without asking again."""
    seen: list[tuple[str, dict[str, object]]] = []

    def core(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append((request.url.path, body))
        if request.url.path == "/v1/jobs/claim":
            if "complete" in body:
                return httpx.Response(422, json={"detail": "complete: extra fields not permitted"})
            return httpx.Response(200, json={"jobs": []})
        if body["receipt_id"] == "r-2":
            return httpx.Response(409, json={"error": "lease_lost", "detail": "gone", "reason": "expired"})
        return httpx.Response(200, json={"job_id": "j1", "state": "done", "copies": 1})

    leases = HttpJobLeases(_client(core))
    done, claimed = await leases.complete_then_claim(JobId("j1"), OwnerToken("t"), "r-1", 1)
    assert done == {"job_id": "j1", "state": "done", "copies": 1} and claimed == []
    refused, claimed = await leases.complete_then_claim(JobId("j2"), OwnerToken("t"), "r-2", 1)
    assert isinstance(refused, LeaseLost) and refused.reason is LeaseLossReason.EXPIRED and claimed == []
    assert [path for path, _ in seen] == [
        "/v1/jobs/claim", "/v1/jobs/j1/complete", "/v1/jobs/claim", "/v1/jobs/j2/complete", "/v1/jobs/claim",
    ]
    assert all(body["wait_s"] == 0.0 for path, body in seen if path == "/v1/jobs/claim")


async def test_a_refusal_inside_a_claim_is_raised_as_its_own_complete_call_would_be() -> None:
    def core(request: httpx.Request) -> httpx.Response:
        refusal = {"status": 403, "error": "not_your_job", "detail": "held by another", "reason": "not_owner"}
        return httpx.Response(200, json={"jobs": [], "refused": refusal})

    refused, claimed = await HttpJobLeases(_client(core)).complete_then_claim(JobId("j1"), OwnerToken("t"), "r", 1)
    assert isinstance(refused, LeaseLost) and refused.reason is LeaseLossReason.NOT_OWNER and claimed == []


async def test_a_claim_whose_answer_was_lost_asks_again_for_its_receipt_without_waiting() -> None:
    seen: list[dict[str, object]] = []
    job = {"job_id": "j1", "order_id": "o1", "token": "t1", "lease_until": "2026-12-03T10:00:00+00:00",
           "attempt": 1, "source_key": "sources/a.mp4", "remaining": []}

    def core(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        if len(seen) == 1:  # core claimed the job, and its answer never came back
            raise httpx.ReadError("connection reset")
        return httpx.Response(200, json={"jobs": [job]})

    ids = iter(["claim-a", "claim-b"])
    leases = HttpJobLeases(_client(core), wait_s=20.0, claim_ids=lambda: next(ids))
    (claimed,) = await leases.claim(WorkerId("w"), 1)
    assert claimed.job_id == "j1" and claimed.token == "t1"
    assert [(body["receipt_id"], body["wait_s"]) for body in seen] == [("claim-a", 20.0), ("claim-a", 0.0)]
    await leases.claim(WorkerId("w"), 1)
    assert seen[-1]["receipt_id"] == "claim-b"  # the next claim is a claim of its own


async def test_a_core_older_than_claim_receipts_gets_claims_without_them() -> None:
    seen: list[dict[str, object]] = []

    def core(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        if "receipt_id" in seen[-1]:
            return httpx.Response(422, json={"detail": "receipt_id: extra fields not permitted"})
        return httpx.Response(200, json={"jobs": []})

    leases = HttpJobLeases(_client(core))
    assert await leases.claim(WorkerId("w"), 1) == []
    assert await leases.claim(WorkerId("w"), 1) == []
    assert ["receipt_id" in body for body in seen] == [True, False, False]
