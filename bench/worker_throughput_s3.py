"""Benchmark: bench/worker_throughput.py with the copies' sources and results in S3 (SeaweedFS,
reached only through the URLs core signs) and 1, 2, 4 and 8 worker processes, each count
beside the raw loop. A benchmark of its own so that bench/all.py holds its headline, issue
21's `ratio_to_raw` ≥ 0.85 at the best count, beside the local store's. Prints one JSON line.

    uv run python bench/worker_throughput_s3.py [--clips 20] [--workers 1,2,4,8]
"""

from __future__ import annotations

import argparse
import sys

import worker_throughput

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--clips", default="20")
    parser.add_argument("--workers", default="1,2,4,8")
    args = parser.parse_args()
    sys.argv = [sys.argv[0], "--store", "s3", "--clips", args.clips, "--workers", args.workers]
    worker_throughput.main()
