"""The quality gate with real FFmpeg and PyAV on the calibration corpus: a plain re-encode is
caught on every kind of video and rendered again; every copy delivered meets the thresholds."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from videocopies.adapters.ffmpeg import FfmpegTranscoder
from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.clips import SCENES, make_scene
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.inprocess import InProcessJobLeases, StoreJobFiles
from videocopies.adapters.memory.objectstore import InMemoryObjectStore
from videocopies.adapters.probe import PyAvProber
from videocopies.adapters.quality import PyAvCopyInspector
from videocopies.application import use_cases as uc
from videocopies.application.worker import Worker
from videocopies.application.worker_settings import WorkerSettings
from videocopies.domain.coins import LotKind
from videocopies.domain.effects import EffectsPlan
from videocopies.domain.orders import OrderState
from videocopies.domain.quality import CopyQuality, QualityThresholds
from videocopies.domain.shared import UserId, WorkerId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

USER = UserId(5)
SOURCE = "sources/5/clip.mp4"


class WeakFirstRender:
    """A renderer whose first render of every copy is the weak plan: no change but a re-encode.
    Re-renders (the next variants) go to the real renderer."""

    def __init__(self) -> None:
        self._real = FfmpegTranscoder()
        self.weak = 0

    async def render(
        self, plan: EffectsPlan, source: Path, target: Path, source_frames: Path | None = None,
        on_progress: Callable[[float], None] | None = None,
    ) -> None:
        if plan.attempt > 0 or source_frames is not None:
            # The real renderer also keeps the source's frames for the gate on the first render.
            await self._real.render(plan, source, target, source_frames=source_frames, on_progress=on_progress)
        if plan.attempt > 0:
            return
        self.weak += 1
        # The weak render must still pass verification, so it keeps the plan's duration.
        subprocess.run(
            [ffmpeg_binary(), "-hide_banner", "-loglevel", "error", "-y", "-i", str(source),
             "-vf", f"setpts=PTS/{plan.speed}", "-af", f"atempo={plan.speed}",
             "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac", "-f", "mp4", str(target)],
            check=True, capture_output=True,
        )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("corpus")
    return {scene: make_scene(folder / f"{scene}.mp4", scene, seconds=1.5, width=240, height=432) for scene in SCENES}


@pytest.mark.parametrize("scene", sorted(SCENES))
async def test_a_weak_plan_is_caught_and_rendered_again_on_every_kind_of_video(
    scene: str, corpus: dict[str, Path], tmp_path: Path
) -> None:
    service = InMemoryService(settings=Settings(quote_secret=b"q" * 32))
    cases, store = service.use_cases, service.gateways.store()
    objects = InMemoryObjectStore()
    objects.objects[SOURCE] = corpus[scene].read_bytes()
    await cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 50, timedelta(days=1)))
    quote = await cases.quote_order()(uc.QuoteOrderCommand(USER, SOURCE, 1, len(objects.objects[SOURCE])))
    order_id = await cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    renderer, thresholds = WeakFirstRender(), QualityThresholds()
    worker = Worker(
        InProcessJobLeases(cases, WorkerId("q")), StoreJobFiles(objects), renderer, PyAvProber(), _Disk(),
        WorkerSettings(WorkerId("q"), tmp_path / "work"), inspector=PyAvCopyInspector(), thresholds=thresholds,
    )
    assert await worker.run_once()
    assert renderer.weak == 1
    (job,) = store.jobs.values()
    artifact = job.checkpoints[0]
    quality = artifact.quality
    assert quality is not None
    assert quality.attempt >= 1, "the re-encode was delivered"
    if artifact.is_given_up:  # even then it is not delivered
        assert store.orders[order_id].copies[0].state.value == "dropped"
    else:
        assert thresholds.shortfalls(quality) == ()
        assert store.orders[order_id].state is OrderState.DONE


@pytest.mark.parametrize("scene", sorted(SCENES))
async def test_a_plain_reencode_misses_the_gate_and_a_planned_copy_looks_like_its_source(
    scene: str, corpus: dict[str, Path], tmp_path: Path
) -> None:
    inspector, source = PyAvCopyInspector(), corpus[scene]
    plan = EffectsPlan.derive(7, 0)
    weak = tmp_path / "weak.mp4"
    subprocess.run([ffmpeg_binary(), "-loglevel", "error", "-i", str(source), "-c:v", "libx264", "-preset",
                    "veryfast", str(weak)], check=True, capture_output=True)
    unchanged = attrs_like(crop=0.0, crop_x=0.0, crop_y=0.0, speed=1.0)
    look = inspector.inspect_blocking(source, weak, unchanged)
    assert look.ssim > 0.98
    assert QualityThresholds().shortfalls(CopyQuality(look.ssim, look.phash_distance)) != ()
    made = tmp_path / "copy.mp4"
    await FfmpegTranscoder().render(plan, source, made)
    look = inspector.inspect_blocking(source, made, plan)
    assert look.ssim > 0.9  # measured through the plan's crop and speed, the copy looks like the source
    assert len(look.fingerprint) == 12


def attrs_like(**values: float) -> object:
    return type("Unchanged", (), values)()


class _Disk:
    def free_bytes(self, path: Path) -> int:
        return 10**12


@pytest.mark.parametrize("scene", ["fast_motion", "dark_scene"])
async def test_frames_kept_by_the_render_and_the_verification_measure_like_decoding_again(
    scene: str, corpus: dict[str, Path], tmp_path: Path
) -> None:
    source, plan = corpus[scene], EffectsPlan.derive(11, 0)
    copy, kept, seen = tmp_path / "copy.mp4", tmp_path / "source.nut", tmp_path / "copy.nut"
    await FfmpegTranscoder().render(plan, source, copy, source_frames=kept)
    verified = await FfmpegDecodingProber().probe(copy, full_decode=True, keep_frames=seen)
    assert verified.frames > 30  # every frame counted, not only the kept ones
    assert kept.stat().st_size < 40 * 128 * 128 and seen.stat().st_size < 70 * 128 * 128
    fast = PyAvCopyInspector().inspect_blocking(source, copy, plan, kept, seen)
    slow = PyAvCopyInspector().inspect_blocking(source, copy, plan)
    assert abs(fast.ssim - slow.ssim) < 0.02
    assert abs(fast.phash_distance - slow.phash_distance) <= 1.5


async def test_a_clip_of_a_few_frames_is_measured_too(tmp_path: Path) -> None:
    source = make_scene(tmp_path / "short.mp4", "fast_motion", seconds=0.2, width=240, height=432)
    plan = EffectsPlan.derive(3, 0)
    copy, kept, seen = tmp_path / "copy.mp4", tmp_path / "source.nut", tmp_path / "copy.nut"
    await FfmpegTranscoder().render(plan, source, copy, source_frames=kept)
    await FfmpegDecodingProber().probe(copy, full_decode=True, keep_frames=seen)
    look = PyAvCopyInspector().inspect_blocking(source, copy, plan, kept, seen)
    assert len(look.fingerprint) == 12 and 0.0 < look.ssim <= 1.0
