"""The garbage collector set for a long-running role.

A role allocates a burst's worth of short-lived objects per request (parsed JSON, rows,
screens); CPython's default collector looks at the youngest objects every 700 allocations
and, every so often, at everything alive, the role's startup included (its imports, the
web app, caches). What exists at startup is frozen out of those walks, and young objects
are collected in larger rounds. Reference counting still frees almost everything at once;
the collector is only for cycles."""

from __future__ import annotations

import gc

YOUNG_ROUND = 20_000


def settle() -> None:
    """Call once the role has started, before it serves."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_ROUND, middle, old)
