"""What this process costs the machine, as a node reports it to core: CPU time (its own and
its finished children's, so a worker's FFmpeg renders count) and resident memory now."""

from __future__ import annotations

import os
import resource
from pathlib import Path


def resident_bytes() -> int:
    """This process's resident set size now (0 where /proc is not there)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def process_figures() -> dict[str, int]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "cpu_ms": int((own.ru_utime + own.ru_stime) * 1000),
        "children_cpu_ms": int((children.ru_utime + children.ru_stime) * 1000),
        "rss_bytes": resident_bytes(),
    }
