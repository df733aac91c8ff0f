"""The job: only the current lease holder may write, and only while its lease runs; each copy
is checkpointed once with its fixed plan; cancel and expiry close the job the right way."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from videocopies.domain.effects import plan_copies
from videocopies.domain.jobs import (
    CancelNotRequested,
    CheckpointConflict,
    CopiesMissing,
    CopyArtifact,
    CopyCheckpointed,
    Job,
    JobClaimed,
    JobFinished,
    JobNotClaimable,
    JobState,
    LeaseExpired,
    LeaseLossReason,
    LeaseLost,
    NoSuchCopyIndex,
    make_job,
)
from videocopies.domain.shared import JobId, OrderId, OwnerToken, WorkerId

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
TTL = timedelta(seconds=30)
PLANS = plan_copies(seed=42, copies=3)
JOB, ORDER = JobId("job-1"), OrderId("order-1")
A, B = WorkerId("worker-a"), WorkerId("worker-b")
TOKEN_A, TOKEN_B = OwnerToken("token-a"), OwnerToken("token-b")


def artifact(index: int, sha: str = "a") -> CopyArtifact:
    return CopyArtifact(f"copies/order-1/{index}.mp4", 1000 + index, sha * 64)


def queued(max_attempts: int = 3) -> Job:
    return make_job(JOB, ORDER, PLANS, T0, max_attempts=max_attempts)


def leased(max_attempts: int = 3) -> Job:
    job = queued(max_attempts)
    job.claim(A, TOKEN_A, T0, TTL)
    return job


def checkpoint_all(job: Job, token: OwnerToken = TOKEN_A, now: datetime = T0) -> None:
    for index, _ in job.remaining():
        job.checkpoint(token, now, index, artifact(index))


# --- claiming -----------------------------------------------------------------------------


def test_a_new_job_is_queued_with_every_copy_and_its_fixed_plan_remaining():
    job = queued()

    assert job.state is JobState.QUEUED
    assert (job.attempts, job.lease, job.copies) == (0, None, 3)
    assert job.remaining() == [(0, PLANS[0]), (1, PLANS[1]), (2, PLANS[2])]


def test_claiming_gives_a_lease_for_the_ttl():
    job = queued()

    lease = job.claim(A, TOKEN_A, T0, TTL)

    assert job.state is JobState.LEASED
    assert (lease.worker_id, lease.token, lease.acquired_at, lease.lease_until, lease.attempt) == (
        A, TOKEN_A, T0, T0 + TTL, 1,
    )
    assert job.lease == lease
    assert job.events == [JobClaimed(JOB, A, 1)]


def test_a_job_under_a_running_lease_cannot_be_claimed():
    job = leased()

    with pytest.raises(JobNotClaimable) as refused:
        job.claim(B, TOKEN_B, T0 + TTL - timedelta(microseconds=1), TTL)

    assert refused.value.state == "leased"
    assert job.lease is not None and job.lease.token == TOKEN_A


def test_a_lease_that_ran_out_is_taken_over_and_the_old_owner_is_fenced_off():
    job = leased()
    job.checkpoint(TOKEN_A, T0, 0, artifact(0))

    lease = job.claim(B, TOKEN_B, T0 + TTL, TTL)

    assert (lease.worker_id, lease.token, lease.attempt) == (B, TOKEN_B, 2)
    assert job.remaining() == [(1, PLANS[1]), (2, PLANS[2])]
    assert LeaseExpired(JOB, A, 1) in job.events
    with pytest.raises(LeaseLost) as refused:
        job.checkpoint(TOKEN_A, T0 + TTL, 1, artifact(1))
    assert refused.value.reason is LeaseLossReason.STALE_TOKEN


@pytest.mark.parametrize("final", ["done", "failed", "cancelled"])
def test_a_closed_job_cannot_be_claimed(final):
    job = leased()
    if final == "done":
        checkpoint_all(job)
        job.complete(TOKEN_A, T0)
    elif final == "failed":
        job.fail(TOKEN_A, T0, "bad source", retryable=False)
    else:
        job.request_cancel()
        job.acknowledge_cancel(TOKEN_A, T0)

    with pytest.raises(JobNotClaimable) as refused:
        job.claim(B, TOKEN_B, T0 + 10 * TTL, TTL)

    assert refused.value.state == final


# --- the lease fence ----------------------------------------------------------------------

WRITES: dict[str, Callable[[Job, OwnerToken, datetime], object]] = {
    "renew": lambda job, token, now: job.renew(token, now, TTL),
    "checkpoint": lambda job, token, now: job.checkpoint(token, now, 0, artifact(0)),
    "complete": lambda job, token, now: job.complete(token, now),
    "fail": lambda job, token, now: job.fail(token, now, "x"),
    "acknowledge_cancel": lambda job, token, now: job.acknowledge_cancel(token, now),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_to_a_job_nobody_leases_is_refused(write):
    job = queued()

    with pytest.raises(LeaseLost) as refused:
        WRITES[write](job, TOKEN_A, T0)

    assert (refused.value.job_id, refused.value.reason) == (JOB, LeaseLossReason.NOT_LEASED)
    assert (job.state, job.version) == (JobState.QUEUED, 0)


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_with_a_stale_token_is_refused(write):
    job = leased()
    job.request_cancel()
    version = job.version

    with pytest.raises(LeaseLost) as refused:
        WRITES[write](job, OwnerToken("token-of-an-earlier-attempt"), T0)

    assert refused.value.reason is LeaseLossReason.STALE_TOKEN
    assert (job.state, job.version, job.checkpoints) == (JobState.LEASED, version, {})


@pytest.mark.parametrize("late", [timedelta(0), timedelta(seconds=1)], ids=["exactly-at-lease-until", "after"])
@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_once_the_lease_ran_out_is_refused(write, late):
    job = leased()
    job.request_cancel()
    version = job.version

    with pytest.raises(LeaseLost) as refused:
        WRITES[write](job, TOKEN_A, T0 + TTL + late)

    assert refused.value.reason is LeaseLossReason.EXPIRED
    assert (job.state, job.version, job.checkpoints) == (JobState.LEASED, version, {})


def test_renewing_extends_the_lease_from_now():
    job = leased()

    cancel = job.renew(TOKEN_A, T0 + timedelta(seconds=20), TTL)

    assert cancel is False
    assert job.lease is not None and job.lease.lease_until == T0 + timedelta(seconds=50)
    job.renew(TOKEN_A, T0 + timedelta(seconds=45), TTL)  # would have expired at +30 without renewal


# --- checkpoints --------------------------------------------------------------------------


def test_a_checkpoint_records_a_copy_once():
    job = leased()

    first = job.checkpoint(TOKEN_A, T0, 1, artifact(1))
    version = job.version
    repeat = job.checkpoint(TOKEN_A, T0, 1, artifact(1))

    assert (first, repeat) == (True, False)
    assert job.version == version
    assert job.checkpoints == {1: artifact(1)}
    assert job.remaining() == [(0, PLANS[0]), (2, PLANS[2])]
    assert [e for e in job.events if isinstance(e, CopyCheckpointed)] == [
        CopyCheckpointed(JOB, ORDER, 1, artifact(1))
    ]


def test_a_checkpoint_with_different_content_for_a_stored_copy_is_a_conflict():
    job = leased()
    job.checkpoint(TOKEN_A, T0, 1, artifact(1))

    with pytest.raises(CheckpointConflict) as refused:
        job.checkpoint(TOKEN_A, T0, 1, artifact(1, sha="b"))

    assert (refused.value.job_id, refused.value.index) == (JOB, 1)
    assert job.checkpoints == {1: artifact(1)}


@pytest.mark.parametrize("index", [-1, 3])
def test_a_checkpoint_for_a_copy_the_job_does_not_have_is_refused(index):
    job = leased()

    with pytest.raises(NoSuchCopyIndex):
        job.checkpoint(TOKEN_A, T0, index, artifact(0))

    assert job.checkpoints == {}


def test_checkpoints_survive_a_new_attempt_and_the_plans_stay_fixed():
    job = leased()
    job.checkpoint(TOKEN_A, T0, 0, artifact(0))
    job.fail(TOKEN_A, T0, "transient")

    job.claim(B, TOKEN_B, T0, TTL)

    assert job.remaining() == [(1, PLANS[1]), (2, PLANS[2])]
    assert job.plans == PLANS


# --- completing and failing ---------------------------------------------------------------


def test_complete_needs_every_copy_checkpointed():
    job = leased()
    job.checkpoint(TOKEN_A, T0, 1, artifact(1))

    with pytest.raises(CopiesMissing) as refused:
        job.complete(TOKEN_A, T0)

    assert refused.value.missing == (0, 2)
    assert job.state is JobState.LEASED


def test_a_job_with_every_copy_checkpointed_completes():
    job = leased()
    checkpoint_all(job)

    job.complete(TOKEN_A, T0)

    assert (job.state, job.lease, job.is_final) == (JobState.DONE, None, True)
    assert job.events[-1] == JobFinished(JOB, ORDER, JobState.DONE)


def test_a_retryable_failure_with_attempts_left_queues_the_job_again():
    job = leased()

    state = job.fail(TOKEN_A, T0, "transient")

    assert state is JobState.QUEUED
    assert (job.state, job.lease, job.last_error) == (JobState.QUEUED, None, "transient")


def test_a_final_failure_fails_the_job():
    job = leased()

    state = job.fail(TOKEN_A, T0, "unreadable source", retryable=False)

    assert state is JobState.FAILED
    assert job.events[-1] == JobFinished(JOB, ORDER, JobState.FAILED, "unreadable source")


def test_a_retryable_failure_on_the_last_attempt_fails_the_job():
    job = queued(max_attempts=2)
    job.claim(A, TOKEN_A, T0, TTL)
    job.fail(TOKEN_A, T0, "first")
    job.claim(B, TOKEN_B, T0, TTL)

    assert job.fail(TOKEN_B, T0, "second") is JobState.FAILED
    assert job.attempts == 2


# --- expiry -------------------------------------------------------------------------------


def test_a_lease_is_taken_back_from_its_lease_until_not_before():
    job = leased()

    assert job.expire(T0 + TTL - timedelta(microseconds=1)) is False
    assert job.expire(T0 + TTL) is True

    assert (job.state, job.lease) == (JobState.QUEUED, None)
    assert job.events[-1] == LeaseExpired(JOB, A, 1)


def test_only_a_leased_job_expires():
    assert queued().expire(T0 + 10 * TTL) is False


def test_attempts_are_capped_and_an_expiry_on_the_last_one_fails_the_job():
    job = queued(max_attempts=3)
    now = T0
    for attempt in (1, 2, 3):
        job.claim(A, OwnerToken(f"token-{attempt}"), now, TTL)
        now += TTL
        assert job.expire(now)

    assert job.state is JobState.FAILED
    assert job.attempts == 3
    assert job.last_error == "lease expired on attempt 3 of 3"
    assert job.events[-1] == JobFinished(JOB, ORDER, JobState.FAILED, "lease expired on attempt 3 of 3")


def test_a_takeover_claim_on_the_last_attempt_fails_the_job_instead():
    job = leased(max_attempts=1)

    with pytest.raises(JobNotClaimable):
        job.claim(B, TOKEN_B, T0 + TTL, TTL)

    assert job.state is JobState.FAILED


# --- cancellation -------------------------------------------------------------------------


def test_cancelling_a_queued_job_closes_it_at_once():
    job = queued()

    assert job.request_cancel() is True
    assert job.state is JobState.CANCELLED
    assert job.events[-1] == JobFinished(JOB, ORDER, JobState.CANCELLED, "cancelled")


def test_cancelling_a_leased_job_asks_its_owner_to_stop():
    job = leased()

    closed = job.request_cancel()
    version = job.version
    again = job.request_cancel()

    assert (closed, again) == (False, False)
    assert job.state is JobState.LEASED and job.cancel_requested
    assert job.version == version
    assert job.renew(TOKEN_A, T0, TTL) is True


def test_the_owner_acknowledging_a_cancel_closes_the_job():
    job = leased()
    job.request_cancel()

    job.acknowledge_cancel(TOKEN_A, T0)

    assert (job.state, job.lease) == (JobState.CANCELLED, None)


def test_acknowledging_a_cancel_nobody_asked_for_is_refused():
    job = leased()

    with pytest.raises(CancelNotRequested):
        job.acknowledge_cancel(TOKEN_A, T0)

    assert job.state is JobState.LEASED


def test_a_cancel_requested_job_whose_lease_runs_out_closes_as_cancelled():
    job = leased()
    job.request_cancel()

    assert job.expire(T0 + TTL) is True
    assert job.state is JobState.CANCELLED


def test_a_cancel_requested_job_that_fails_closes_as_cancelled_not_queued():
    job = leased()
    job.request_cancel()

    assert job.fail(TOKEN_A, T0, "stopped", retryable=True) is JobState.CANCELLED


def test_cancelling_a_closed_job_changes_nothing():
    job = leased()
    checkpoint_all(job)
    job.complete(TOKEN_A, T0)
    version = job.version

    assert job.request_cancel() is True
    assert (job.state, job.version, job.cancel_requested) == (JobState.DONE, version, False)
