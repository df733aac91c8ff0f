"""The unit of work a use case opens: its own, or the one an inbox turn holds open.

An inbox turn handles a user's events in one transaction (`application/bot/inbox.py`). While
it runs, the use cases the conversation calls join that transaction instead of opening one:
their `commit` sends their writes (behind a savepoint, so a refused write undoes only them)
and the turn commits everything with the events marked done. Outside a turn nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from videocopies.application.ports import UnitOfWork

_OPEN: ContextVar[UnitOfWork | None] = ContextVar("videocopies_open_unit_of_work", default=None)
_AFTER: ContextVar[list[Callable[[], None]] | None] = ContextVar("videocopies_after_commit", default=None)


def new_or_joined(factory: Callable[[], UnitOfWork]) -> UnitOfWork:
    """The open turn's unit of work (entered again, it is joined), else a new one."""
    return _OPEN.get() or factory()


def open_unit_of_work() -> UnitOfWork | None:
    """The unit of work use cases join now (for an adapter whose reads belong in it)."""
    return _OPEN.get()


def after_commit(news: Callable[[], None]) -> None:
    """Tell `news` once the writes are committed: now, or when the turn that was joined commits."""
    waiting = _AFTER.get()
    if waiting is None:
        news()
    else:
        waiting.append(news)


@contextmanager
def joining(uow: UnitOfWork) -> Iterator[list[Callable[[], None]]]:
    """Use cases called inside this block (in this task) join `uow`; it gives the news they
    leave for after its commit (`after_commit`)."""
    news: list[Callable[[], None]] = []
    tokens = _OPEN.set(uow), _AFTER.set(news)
    try:
        yield news
    finally:
        _OPEN.reset(tokens[0])
        _AFTER.reset(tokens[1])
