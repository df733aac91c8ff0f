"""Jobs: leases with owner tokens, a checkpoint per copy, cancellation as a protocol."""

from videocopies.domain.jobs.errors import (
    CancelNotRequested,
    CheckpointConflict,
    CopiesMissing,
    JobNotClaimable,
    LeaseLossReason,
    LeaseLost,
    NoSuchCopyIndex,
)
from videocopies.domain.jobs.job import (
    FINAL_JOB_STATES,
    CopyArtifact,
    CopyCheckpointed,
    Job,
    JobClaimed,
    JobFinished,
    JobState,
    LeaseExpired,
    make_job,
)
from videocopies.domain.jobs.lease import Lease

__all__ = [
    "FINAL_JOB_STATES", "CancelNotRequested", "CheckpointConflict", "CopiesMissing",
    "CopyArtifact", "CopyCheckpointed", "Job", "JobClaimed", "JobFinished", "JobNotClaimable",
    "JobState", "Lease", "LeaseExpired", "LeaseLossReason", "LeaseLost", "NoSuchCopyIndex",
    "make_job",
]
