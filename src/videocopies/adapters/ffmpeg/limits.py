"""What an FFmpeg child may use, set in the child before exec: whatever its input holds, it
cannot take more CPU time, memory or disk than its render was given, nor outlive the worker."""

from __future__ import annotations

import ctypes
import math
import resource
import signal
import sys
from collections.abc import Callable, Iterable

import attrs

MIB = 1024 * 1024
# Address space, not resident memory: glibc's per-thread arenas and thread stacks count in
# full. Measured peaks (VmPeak) of a render: 1.6 GiB at 1080p30 on 2 cores, 1.9 GiB with 8
# encoder threads, 2.3 GiB with 16, 2.4 GiB at 2160p30; resident at most 1.0 GiB.
DEFAULT_MEMORY_BYTES = 4096 * MIB
# A copy with no size cap (copies make, tests) still has a bound: twice Telegram's largest.
UNCAPPED_FILE_BYTES = 4096 * MIB
FILE_HEADROOM = 1.25
# Room over the cap for the quality gate's frames file (measured 0.5-0.6 MiB: a few small gray
# frames at 12 moments, whatever the length) and the MP4 index written at the end.
FILE_SPARE_BYTES = 16 * MIB


def file_bytes_for(max_copy_bytes: int | None) -> int:
    """The largest file a render may write: the copy's cap with headroom. A copy just over the
    cap is still written, so the worker can tell the user it was too large."""
    cap = max_copy_bytes if max_copy_bytes is not None else UNCAPPED_FILE_BYTES
    return int(cap * FILE_HEADROOM) + FILE_SPARE_BYTES


@attrs.frozen
class ChildLimits:
    cpu_s: int
    memory_bytes: int
    file_bytes: int

    @classmethod
    def of(cls, cpu_s: float, memory_bytes: int, file_bytes: int) -> ChildLimits:
        return cls(max(1, math.ceil(cpu_s)), memory_bytes, file_bytes)

    def preexec(self) -> Callable[[], None]:
        def in_child() -> None:
            _die_with_parent()
            self._apply()

        return in_child

    def _apply(self) -> None:
        # Soft = hard: at the CPU limit the kernel kills at once. Below the hard limit it would
        # send SIGXCPU, which FFmpeg takes as a polite stop and goes on writing its output.
        for kind, value in (
            (resource.RLIMIT_CPU, self.cpu_s),
            (resource.RLIMIT_AS, self.memory_bytes),
            (resource.RLIMIT_FSIZE, self.file_bytes),
        ):
            _, hard = resource.getrlimit(kind)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))

    def why_stopped(self, code: int, stderr: Iterable[str]) -> str | None:
        """In one line, the limit that stopped a child which exited with `code`; None if none did.
        A SIGKILL the caller did not send comes from the CPU limit."""
        lines = list(stderr)
        if code == -signal.SIGKILL:
            return f"ffmpeg was killed at its CPU-time limit of {self.cpu_s} s"
        if code == -signal.SIGXFSZ or any("File too large" in line for line in lines):
            return f"ffmpeg's output passed its size limit of {self.file_bytes} bytes"
        memory = f"its memory limit of {self.memory_bytes // MIB} MiB"
        # Past the limit, an allocation fails, a thread cannot get its stack, or the program
        # cannot even load its libraries and crashes.
        if any(sign in line for line in lines for sign in _OUT_OF_MEMORY):
            return f"ffmpeg ran out of {memory}"
        if code == -signal.SIGSEGV:
            return f"ffmpeg crashed (SIGSEGV), at {memory} or on a broken input"
        return None


_OUT_OF_MEMORY = ("Cannot allocate memory", "Resource temporarily unavailable")


def _die_with_parent() -> None:
    """A worker killed with SIGKILL takes its FFmpeg along (Linux), so nothing keeps writing
    into a directory the restarted worker is about to remove."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
