"""Application errors: what a caller asked for does not exist, or lost a race."""

from __future__ import annotations

from typing import ClassVar

import attrs

from videocopies.domain.shared import describe


@attrs.define
class ApplicationError(Exception):
    def __str__(self) -> str:
        return describe(self)


@attrs.define
class NotFound(ApplicationError):
    """Absent, or not the caller's to see (we do not tell the two apart)."""

    kind: str
    key: str


@attrs.define
class Conflict(ApplicationError):
    """A concurrent change won; the caller may retry with fresh state."""

    kind: str
    key: str


@attrs.define
class ServiceBusy(ApplicationError):
    """Every capacity slot is taken: the order is refused now, nothing is reserved."""

    order_id: str


@attrs.define
class UnusableMedia(ApplicationError):
    """A media file refused by a prober. `permanent` when the file itself is the problem
    (retrying elsewhere cannot help); not when, say, probing ran out of time."""

    reason: str
    permanent: ClassVar[bool] = True


@attrs.define
class ProviderUnavailable(ApplicationError):
    """The payment provider could not be reached or gave no clear answer; try again later."""

    reason: str


@attrs.define
class ProviderNotConfigured(ProviderUnavailable):
    """This process was given no way to reach the payment provider."""


@attrs.define
class RefundRefused(ApplicationError):
    """The payment provider refused a refund for good (unknown charge, wrong user, ...)."""

    external_id: str
    reason: str
