"""Which core a node calls: one of a list (VIDEOCOPIES_CORE_URL, comma separated; a balancer's
address is a list of one), the first one that is not resting. A core that failed a call
(refused, timed out, answered 502/503/504) rests for a while and the node calls the next; once
its rest is over the node comes back to it, so the list's order is the order of preference. A
core that fails again rests twice as long each time (up to MAX_REST_S): one that hangs costs a
call's timeout now and then, not every REST_S.

A relocation (a deploy's 308) replaces the core that sent it, and is kept in a small file in
the node's work directory: a node restarted after a deploy goes to the new address, not back
to the one in its settings."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from videocopies.adapters.kept import keep, read_kept

log = logging.getLogger(__name__)
MOVES_FILE = "core-moved.json"
REST_S = 15.0
MAX_REST_S = 300.0


def core_urls(setting: str) -> list[str]:
    """The cores named in VIDEOCOPIES_CORE_URL: one URL, or several separated by commas."""
    return [url.strip().rstrip("/") for url in setting.split(",") if url.strip()]


class CoreChoice:
    def __init__(
        self, urls: Sequence[str], moves_file: Path | None = None, rest_s: float = REST_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not urls:
            raise ValueError("no core URL")
        self._moves_file, self._rest_s, self._clock = moves_file, rest_s, clock
        self._moves = self._read_moves()
        self.urls = [self._followed(url.rstrip("/")) for url in urls]
        self._resting_until = [0.0] * len(self.urls)
        self._failures = [0] * len(self.urls)  # in a row, each core's
        self._index = 0

    @property
    def current(self) -> str:
        return self.urls[self._index]

    @property
    def several(self) -> bool:
        return len(self.urls) > 1

    def failed(self, url: str) -> bool:
        """The core at `url` failed a call: it rests, and when it was the current one the first
        core not resting is chosen (else the one whose rest ends first). True when the current
        core is now another one, not resting: the call may go there at once."""
        now = self._clock()
        if url in self.urls:
            failed = self.urls.index(url)
            rest = min(MAX_REST_S, self._rest_s * 2 ** self._failures[failed])
            self._resting_until[failed], self._failures[failed] = now + rest, self._failures[failed] + 1
        if self.current == url:
            awake = [i for i in range(len(self.urls)) if self._resting_until[i] <= now]
            self._index = awake[0] if awake else min(range(len(self.urls)), key=self._resting_until.__getitem__)
            if self.current != url:
                log.warning("core %s failed; calling %s", url, self.current)
        return self.current != url and self._resting_until[self._index] <= now

    def answered(self, url: str) -> None:
        """The core at `url` answered a call: its next failure rests it for REST_S again."""
        if url in self.urls:
            self._failures[self.urls.index(url)] = 0

    def preferred(self) -> bool:
        """Back to an earlier core of the list whose rest is over; True when the choice changed."""
        now = self._clock()
        for i in range(self._index):
            if self._resting_until[i] <= now:
                self._index = i
                return True
        return False

    def moved(self, old_url: str, new_url: str) -> None:
        """The core at `old_url` sent its nodes to `new_url`: it replaces that core, now and
        at the node's next start."""
        old_url, new_url = old_url.rstrip("/"), new_url.rstrip("/")
        if old_url in self.urls:
            index = self.urls.index(old_url)
            self.urls[index], self._resting_until[index], self._failures[index] = new_url, 0.0, 0
        self._moves[old_url] = new_url
        self._write_moves()

    def _followed(self, url: str) -> str:
        seen = {url}
        while (url := self._moves.get(url, url)) not in seen:  # a chain of deploys, never a loop
            seen.add(url)
        return url

    def _read_moves(self) -> dict[str, str]:
        if self._moves_file is None:
            return {}
        try:
            moves = read_kept(self._moves_file)
        except (OSError, ValueError) as error:
            log.warning("ignoring %s: %r", self._moves_file, error)
            return {}
        return {str(k): str(v) for k, v in moves.items()} if isinstance(moves, dict) else {}

    def _write_moves(self) -> None:
        if self._moves_file is None:
            return
        try:
            keep(self._moves_file, self._moves)
        except OSError as error:  # the node goes on with the move in memory
            log.warning("could not keep the move to %s in %s: %r", self.current, self._moves_file, error)
