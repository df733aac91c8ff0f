"""Predictable identifiers for tests and the demo: readable and repeatable."""

from __future__ import annotations

import itertools
import random

from videocopies.domain.shared import JobId, LotId, OrderId, OwnerToken


class SequentialIds:
    def __init__(self, seed: int = 0) -> None:
        self._n = itertools.count(1)
        self._random = random.Random(seed)

    def order_id(self) -> OrderId:
        return OrderId(f"order-{next(self._n)}")

    def job_id(self) -> JobId:
        return JobId(f"job-{next(self._n)}")

    def lot_id(self) -> LotId:
        return LotId(f"lot-{next(self._n)}")

    def owner_token(self) -> OwnerToken:
        return OwnerToken(f"token-{next(self._n)}")

    def seed(self) -> int:
        return self._random.getrandbits(63)
