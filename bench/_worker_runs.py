"""What bench/worker_throughput.py compares the pipeline with: the raw loop (the same FFmpeg
command, verification and quality gate, without the machinery) and the gate's share of the
render's CPU; and how it reads a process's CPU and memory."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import resource
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import uvloop

from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.ffmpeg.render import SourceInfo, ffmpeg_args
from videocopies.adapters.ffmpeg.transcoder import probe as probe_source
from videocopies.adapters.quality import PyAvCopyInspector
from videocopies.domain.effects import EffectsPlan, plan_copies
from videocopies.telegram_limits import MediaLimits

# The size every worker encodes a copy to fit (they start without VIDEOCOPIES_ variables: the
# defaults). The cap puts x264's rate control (-maxrate, -bufsize) in the command, about 3.5%
# more render CPU: a raw loop without it made less than the workers' copies.
COPY_CAP = MediaLimits.from_env({}).upload_bytes


def peak_rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class FfmpegRssSampler(threading.Thread):
    """Samples the resident size of every running ffmpeg, keeping the peak."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_mib = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    try:
                        if b"ffmpeg" in (entry / "cmdline").read_bytes().split(b"\0")[0]:
                            self.peak_mib = max(self.peak_mib, peak_rss_mib(int(entry.name)))
                    except OSError:
                        continue
            time.sleep(0.05)


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def plain_copy(args: tuple[str, dict[str, Any], str]) -> float:
    """What one job is, without the machinery: the same FFmpeg command, the same full decode
    and the same quality gate (the render keeps the source's frames, the decode the copy's).
    Returns the CPU seconds it took, this process's and its children's."""
    began = _cpu_with_children()
    source, planned, target = args
    plan = EffectsPlan.from_dict(planned)
    info = probe_source(Path(source))
    kept, seen = Path(target).with_suffix(".nut"), Path(target).with_suffix(".frames.nut")
    args = ffmpeg_args(plan, info, Path(source), Path(target), source_frames=kept, max_bytes=COPY_CAP)
    subprocess.run([ffmpeg_binary(), *args], check=True, capture_output=True)
    # The worker's verification: the header through PyAV, every frame decoded by FFmpeg.
    uvloop.run(FfmpegDecodingProber().probe(Path(target), full_decode=True, keep_frames=seen))
    PyAvCopyInspector().inspect_blocking(Path(source), Path(target), plan, kept, seen)
    for path in (Path(target), kept, seen):
        path.unlink()
    return _cpu_with_children() - began


def _cpu_with_children() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime + children_cpu()


def plain(clip: Path, plans: list[dict[str, Any]], workers: int, tmp: Path) -> tuple[float, float]:
    """Seconds the raw loop takes to make a copy by each plan with `workers` processes (the
    pipeline's own plans: the same work), and the CPU seconds the copies took."""
    jobs = [(str(clip), plan, str(tmp / f"plain-{n}.mp4")) for n, plan in enumerate(plans)]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        list(pool.map(plain_copy, jobs[:workers]))  # warm the processes, untimed
        began = time.perf_counter()
        cpu = sum(pool.map(plain_copy, jobs))
        return time.perf_counter() - began, cpu


def render_cpu(plan: EffectsPlan, info: SourceInfo, source: Path, target: Path, kept: Path | None) -> float:
    before = children_cpu()
    args = ffmpeg_args(plan, info, source, target, source_frames=kept, max_bytes=COPY_CAP)
    subprocess.run([ffmpeg_binary(), *args], check=True, capture_output=True)
    return children_cpu() - before


def decode_cpu(prober: FfmpegDecodingProber, copy: Path, seen: Path | None) -> float:
    before = children_cpu()
    uvloop.run(prober.probe(copy, full_decode=True, keep_frames=seen))
    return children_cpu() - before


def gate_cpu_share(clip: Path, jobs: int, tmp: Path) -> dict[str, float]:
    """The quality gate's CPU seconds as a share of rendering's, over one-copy jobs (nothing
    shared between copies: its worst case). The gate's seconds are the inspector's (everything
    measured) plus what keeping the frames adds to the render and to the verifying decode,
    each taken as the difference between the same run with and without keeping them.
    Each run is made twice (with, without, without, with: a drift over time cancels) and the
    lesser CPU of the two is taken: one render's CPU varies from run to run by 5% and at times
    25% (x264's threads on a shared machine), ten times what keeping the frames adds, and the
    difference of single runs read that noise as the gate's (0.03 to 0.1 of the render)."""
    info, prober = probe_source(clip), FfmpegDecodingProber()
    render = kept_extra = inspect = 0.0
    for n in range(jobs):
        plan = plan_copies(1000 + n, 1)[0]
        target, kept, seen = tmp / f"gate-{n}.mp4", tmp / f"gate-{n}.nut", tmp / f"gate-{n}.frames.nut"
        # Alternate which run goes first, so neither gains from a warm cache.
        pair = [(kept, seen), (None, None)] if n % 2 else [(None, None), (kept, seen)]
        spent: dict[bool, tuple[float, float]] = {}
        for keep, keep_copy in [*pair, *reversed(pair)]:
            once = (render_cpu(plan, info, clip, target, keep), decode_cpu(prober, target, keep_copy))
            least = spent.get(keep is not None, once)
            spent[keep is not None] = (min(least[0], once[0]), min(least[1], once[1]))
        inspector = PyAvCopyInspector()  # a fresh one per job: nothing cached from the last
        inspector.inspect_blocking(clip, target, plan, kept, seen)
        render += spent[False][0]
        kept_extra += sum(spent[True]) - sum(spent[False])
        inspect += inspector.cpu_seconds
        for path in (target, kept, seen):
            path.unlink()
    return {"gate_cpu_share": round((inspect + kept_extra) / render, 4),
            "render_cpu_s_per_copy": round(render / jobs, 3), "gate_inspect_cpu_s_per_copy": round(inspect / jobs, 4),
            "gate_kept_frames_cpu_s_per_copy": round(kept_extra / jobs, 4)}
