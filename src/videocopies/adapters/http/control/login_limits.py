"""How many wrong passwords the panel hears before it stops listening, per address and per account.

An attempt is counted as a failure before its password is checked, and taken back only if the
password was right: guesses sent in parallel are counted as they arrive, not after each has
been refused, so a burst cannot slip past the limit. A success takes back only its own
attempt and its own address's failures; failures from other addresses still count.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

import attrs

ACCOUNT = "operator"  # the panel has one password, so one account
MAX_ADDRESSES = 10_000  # addresses remembered at once; the oldest go first


@attrs.frozen
class Refused:
    retry_after_s: int


@attrs.frozen
class Attempt:
    address: str
    account: str
    at: float


@attrs.define
class LoginLimits:
    per_address: int = attrs.field(default=5, validator=attrs.validators.ge(1))
    per_account: int = attrs.field(default=20, validator=attrs.validators.ge(1))
    window_s: float = attrs.field(default=900.0, validator=attrs.validators.gt(0))
    now: Callable[[], float] = time.monotonic
    _addresses: dict[str, deque[float]] = attrs.field(factory=dict, init=False)
    _accounts: dict[str, deque[float]] = attrs.field(factory=dict, init=False)

    def begin(self, address: str, account: str = ACCOUNT) -> Attempt | Refused:
        """Count an attempt as a failure now, or refuse it with how long until one is allowed."""
        at = self.now()
        wait = max(self._wait(self._addresses, address, self.per_address, at),
                   self._wait(self._accounts, account, self.per_account, at))
        if wait > 0:
            return Refused(max(1, math.ceil(wait)))
        self._addresses.setdefault(address, deque()).append(at)
        self._accounts.setdefault(account, deque()).append(at)
        while len(self._addresses) > MAX_ADDRESSES:
            del self._addresses[next(iter(self._addresses))]
        return Attempt(address, account, at)

    def succeeded(self, attempt: Attempt) -> None:
        self._addresses.pop(attempt.address, None)
        failures = self._accounts.get(attempt.account)
        if failures is not None and attempt.at in failures:
            failures.remove(attempt.at)

    def _wait(self, counted: dict[str, deque[float]], key: str, limit: int, at: float) -> float:
        failures = counted.get(key)
        if failures is None:
            return 0.0
        while failures and failures[0] <= at - self.window_s:
            failures.popleft()
        if not failures:
            del counted[key]
            return 0.0
        return failures[-limit] + self.window_s - at if len(failures) >= limit else 0.0
