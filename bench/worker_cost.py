"""Benchmark: a worker's CPU seconds per copy by the clip's resolution and length, and the bytes
a copy moves, for docs/scaling.md's capacity model.

For each of 480p, 720p and 1080p (vertical, 25 fps, with sound) × 3 s, 15 s and 60 s clips, it
makes `--copies` copies the way a worker does, in this process and its FFmpeg children: the
render (keeping the source's frames for the gate), the verification (PyAV header, every frame
decoded by FFmpeg, keeping the copy's frames) and the quality gate. CPU is user + system time
of this process and its finished children, so it is steady on a shared machine where wall time
is not. Also the source's and the copy's size (a synthetic clip compresses better than a
phone's video: the sizes are a floor). Prints one JSON line; `cells` holds one entry per clip.

    uv run python bench/worker_cost.py [--copies 2] [--resolutions 480,720,1080] [--seconds 3,15,60]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop
from _support import emit

from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.clips import make_clip
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.ffmpeg.render import ffmpeg_args
from videocopies.adapters.ffmpeg.transcoder import probe as probe_source
from videocopies.adapters.quality import PyAvCopyInspector
from videocopies.domain.effects import plan_copies

SIDES = {480: (480, 854), 720: (720, 1280), 1080: (1080, 1920)}  # width × height of a vertical clip


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def one_copy(source: Path, seed: int, scratch: Path) -> tuple[float, int]:
    """CPU seconds and bytes of one copy made and checked as the worker does."""
    began = _cpu()
    plan, info = plan_copies(seed, 1)[0], probe_source(source)
    target, kept, seen = scratch / "copy.mp4", scratch / "source-frames.nut", scratch / "copy.frames.nut"
    subprocess.run([ffmpeg_binary(), *ffmpeg_args(plan, info, source, target, source_frames=kept)],
                   check=True, capture_output=True)
    uvloop.run(FfmpegDecodingProber().probe(target, full_decode=True, keep_frames=seen))
    PyAvCopyInspector().inspect_blocking(source, target, plan, kept, seen)
    spent, size = _cpu() - began, target.stat().st_size
    for path in (target, kept, seen):
        path.unlink(missing_ok=True)
    return spent, size


def cell(resolution: int, seconds: int, copies: int, scratch: Path) -> dict[str, Any]:
    width, height = SIDES[resolution]
    source = make_clip(scratch / f"clip-{resolution}-{seconds}.mp4", seconds=seconds, width=width, height=height,
                       fps=25)
    began = time.perf_counter()
    made = [one_copy(source, 100 + n, scratch) for n in range(copies)]
    figures = {
        "resolution": f"{resolution}p", "seconds": seconds,
        "cpu_s_per_copy": round(sum(cpu for cpu, _ in made) / copies, 2),
        "wall_s_per_copy": round((time.perf_counter() - began) / copies, 2),
        "source_bytes": source.stat().st_size, "copy_bytes": round(sum(size for _, size in made) / copies),
    }
    source.unlink()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--resolutions", default="480,720,1080")
    parser.add_argument("--seconds", default="3,15,60")
    args = parser.parse_args()
    load = round(os.getloadavg()[0], 2)
    cells = []
    with tempfile.TemporaryDirectory(prefix="videocopies-bench-") as scratch:
        for resolution in (int(r) for r in args.resolutions.split(",")):
            for seconds in (int(s) for s in args.seconds.split(",")):
                cells.append(cell(resolution, seconds, args.copies, Path(scratch)))
                print(cells[-1], flush=True, file=sys.stderr)
    per_clip_second = {c["resolution"]: round(c["cpu_s_per_copy"] / c["seconds"], 3) for c in cells
                       if c["seconds"] == max(x["seconds"] for x in cells)}
    emit({"bench": "worker_cost", "copies": args.copies, "cpu_s_per_clip_second": per_clip_second, "cells": cells,
          "load_average": [load, round(os.getloadavg()[0], 2)]})


if __name__ == "__main__":
    main()
