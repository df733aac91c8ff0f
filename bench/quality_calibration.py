"""Calibration of the copy quality gate on the generated corpus (docs/quality.md).

For each scene of the corpus (talking head, screen recording, fast motion, static image,
dark scene) one order of 10 copies is rendered with the production renderer, and every
copy is measured by the production inspector: the first render of every plan (the
distributions the thresholds are chosen from), then the gate's decisions (re-renders,
copies given up). Frames are kept by the render and the verification, as in the worker.
A plain re-encode of each scene, the weak plan, is measured too.

Prints one JSON line.

    uv run python bench/quality_calibration.py [--copies 10] [--seconds 2] [--size 360x640] [--layout 2]
    uv run python bench/quality_calibration.py --seeds 13-30 --scenes talking_head --layout 1

With `--seeds`, one order of each scene for each seed, and only the re-renders and copies given
up, summed: what docs/quality.md compares the layouts of first plans by.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
from _support import emit

from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.clips import SCENES, make_scene
from videocopies.adapters.ffmpeg.decode import FfmpegDecodingProber
from videocopies.adapters.ffmpeg.render import ffmpeg_args
from videocopies.adapters.ffmpeg.transcoder import probe
from videocopies.adapters.quality import PyAvCopyInspector
from videocopies.domain.effects import LAYOUT, plan_copies
from videocopies.domain.quality import MAX_RERENDERS, CopyQuality, QualityThresholds, pair_distance, variant

SEED = 20261129


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"min": round(ordered[0], 4), "p10": round(ordered[len(ordered) // 10], 4),
            "median": round(statistics.median(ordered), 4), "max": round(ordered[-1], 4)}


def plain_reencode(source: Path, target: Path) -> Path:
    """The weak plan: no effect at all, only a new encode."""
    subprocess.run([ffmpeg_binary(), "-hide_banner", "-loglevel", "error", "-y", "-i", str(source),
                    "-c:v", "libx264", "-preset", "veryfast", "-crf", "22", "-c:a", "aac", str(target)],
                   check=True, capture_output=True)
    return target


def scene_figures(scene: str, tmp: Path, copies: int, seconds: float, size: tuple[int, int],
                  thresholds: QualityThresholds, seed: int = SEED, layout: int = LAYOUT) -> dict[str, Any]:
    source = make_scene(tmp / f"{scene}.mp4", scene, seconds=seconds, width=size[0], height=size[1])
    info = probe(source)
    inspector = PyAvCopyInspector()
    kept = tmp / f"{scene}-source.nut"
    first: list[CopyQuality] = []
    first_prints: list[tuple[int, ...]] = []
    accepted: dict[int, tuple[int, ...]] = {}
    rerenders = given_up = 0
    delivered: list[CopyQuality] = []
    for plan in plan_copies(seed, copies, layout):
        for attempt in range(MAX_RERENDERS + 1):
            used = variant(plan, attempt)
            target = tmp / f"{scene}-{plan.copy_index}-{attempt}.mp4"
            seen = target.with_suffix(".nut")
            # As the worker does: the render keeps the source's frames, the verification the copy's.
            subprocess.run([ffmpeg_binary(), *ffmpeg_args(used, info, source, target, source_frames=kept)],
                           check=True, capture_output=True)
            asyncio.run(FfmpegDecodingProber().probe(target, full_decode=True, keep_frames=seen))
            look = inspector.inspect_blocking(source, target, used, kept, seen)
            target.unlink()
            seen.unlink()
            if attempt == 0:
                pairs = [pair_distance(look.fingerprint, other) for other in first_prints]
                first.append(CopyQuality(look.ssim, look.phash_distance, min(pairs) if pairs else None))
                first_prints.append(look.fingerprint)
            pairs = [pair_distance(look.fingerprint, other) for other in accepted.values()]
            quality = CopyQuality(look.ssim, look.phash_distance, min(pairs) if pairs else None, attempt)
            if not thresholds.shortfalls(quality):
                accepted[plan.copy_index] = look.fingerprint
                delivered.append(quality)
                break
            if attempt == MAX_RERENDERS:
                given_up += 1
            else:
                rerenders += 1
    weak = inspector.inspect_blocking(source, plain_reencode(source, tmp / f"{scene}-weak.mp4"),
                                      SimpleNamespace(crop=0.0, crop_x=0.0, crop_y=0.0, speed=1.0))
    return {
        "first_render": {
            "ssim": _spread([q.ssim for q in first]),
            "phash_distance": _spread([q.phash_distance for q in first]),
            "min_pair_distance": _spread([q.min_pair_distance for q in first if q.min_pair_distance is not None]),
        },
        "weak": {"ssim": weak.ssim, "phash_distance": weak.phash_distance,
                 "caught": bool(thresholds.shortfalls(CopyQuality(weak.ssim, weak.phash_distance)))},
        "rerenders": rerenders, "given_up": given_up, "delivered": len(delivered),
        "delivered_meet_thresholds": all(not thresholds.shortfalls(q) for q in delivered),
    }


def over_seeds(scenes: list[str], seeds: range, layout: int, copies: int, seconds: float,
               size: tuple[int, int], thresholds: QualityThresholds) -> dict[str, Any]:
    """One order a seed and scene: the re-renders and copies given up, summed over the seeds."""
    totals: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="videocopies-quality-") as scratch:
        for scene in scenes:
            runs = [scene_figures(scene, Path(scratch), copies, seconds, size, thresholds, seed, layout)
                    for seed in seeds]
            totals[scene] = {
                "copies": copies * len(runs), "rerenders": sum(r["rerenders"] for r in runs),
                "given_up": sum(r["given_up"] for r in runs),
                "delivered_meet_thresholds": all(r["delivered_meet_thresholds"] for r in runs),
            }
    return totals


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--size", default="360x640")
    parser.add_argument("--seeds", help="FIRST-LAST: one order a seed and scene, totals only")
    parser.add_argument("--layout", type=int, default=LAYOUT, help="how the first plans are laid out (1 or 2)")
    parser.add_argument("--scenes", default=",".join(SCENES))
    args = parser.parse_args()
    size = tuple(int(side) for side in args.size.split("x"))
    thresholds = QualityThresholds()
    if args.seeds:
        first, _, last = args.seeds.partition("-")
        seeds = range(int(first), int(last or first) + 1)
        totals = over_seeds(args.scenes.split(","), seeds, args.layout, args.copies, args.seconds, size, thresholds)
        emit({"bench": "quality_calibration", "layout": args.layout, "seeds": args.seeds,
              "copies_per_order": args.copies, "scenes": totals})
        return
    with tempfile.TemporaryDirectory(prefix="videocopies-quality-") as scratch:
        scenes = {scene: scene_figures(scene, Path(scratch), args.copies, args.seconds, size, thresholds,
                                       layout=args.layout)
                  for scene in args.scenes.split(",")}
    emit({"bench": "quality_calibration", "thresholds": attrs.asdict(thresholds),
          "copies_per_scene": args.copies, "seconds": args.seconds, "size": args.size, "scenes": scenes})


if __name__ == "__main__":
    main()
