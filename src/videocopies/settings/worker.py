"""What `videocopies worker` reads from the environment (docs/operations.md names each variable).
Nothing here may load a database driver: the worker holds no database credentials."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from videocopies.domain.quality import QualityThresholds
from videocopies.settings.links import CoreLink
from videocopies.settings.parse import Environ, number, optional_path, path, whole
from videocopies.settings.service import quality_thresholds
from videocopies.telegram_limits import MediaLimits

MIB = 1024 * 1024


def ffmpeg_memory_bytes(env: Environ) -> int:
    """VIDEOCOPIES_FFMPEG_MEMORY_MB: the address space of each FFmpeg child (4096, at least 256)."""
    megabytes = whole(env, "VIDEOCOPIES_FFMPEG_MEMORY_MB", 4096)
    if megabytes < 256:
        raise SystemExit(
            f"VIDEOCOPIES_FFMPEG_MEMORY_MB must be at least 256 (MiB): FFmpeg does not start in less, not {megabytes}"
        )
    return megabytes * MIB


@attrs.frozen
class WorkerNodeSettings:
    """A worker's process: core it links (VIDEOCOPIES_RETRY_FOR_S: how long a call is tried
    again while core is away), its scratch (VIDEOCOPIES_WORK_DIR), the shared
    VIDEOCOPIES_STORE_DIR (else URLs core signs for each job), how long a claim waits for work
    (VIDEOCOPIES_CLAIM_WAIT_S), the lease it renews a third of the way
    (VIDEOCOPIES_LEASE_TTL_S), the media limits edge applies, each FFmpeg child's memory and the
    quality gate's floors."""

    core: CoreLink
    retry_for_s: float = 120.0
    work_dir: Path = Path("var/work")
    store_dir: Path | None = None
    claim_wait_s: float = 20.0
    lease_ttl_s: float = 30.0
    limits: MediaLimits = attrs.field(factory=lambda: MediaLimits.from_env({}))
    ffmpeg_memory_bytes: int = 4096 * MIB
    thresholds: QualityThresholds = QualityThresholds()

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> WorkerNodeSettings:
        env = os.environ if environ is None else environ
        return cls(
            core=CoreLink.from_env(env), retry_for_s=number(env, "VIDEOCOPIES_RETRY_FOR_S", 120),
            work_dir=path(env, "VIDEOCOPIES_WORK_DIR", "var/work"),
            store_dir=optional_path(env, "VIDEOCOPIES_STORE_DIR"),
            claim_wait_s=number(env, "VIDEOCOPIES_CLAIM_WAIT_S", 20),
            lease_ttl_s=number(env, "VIDEOCOPIES_LEASE_TTL_S", 30),
            limits=MediaLimits.from_env(env), ffmpeg_memory_bytes=ffmpeg_memory_bytes(env),
            thresholds=quality_thresholds(env),
        )
