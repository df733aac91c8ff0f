"""Reading one variable: a bad value stops the process with a line naming the variable."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

Environ = Mapping[str, str]


def text(env: Environ, name: str, default: str = "") -> str:
    return env.get(name, default)


def optional(env: Environ, name: str) -> str | None:
    """The value, or None when the variable is unset or empty."""
    return env.get(name) or None


def flag(env: Environ, name: str) -> bool:
    """On only when set to 1."""
    return env.get(name) == "1"


def path(env: Environ, name: str, default: str) -> Path:
    return Path(env.get(name, default))


def optional_path(env: Environ, name: str) -> Path | None:
    value = env.get(name)
    return Path(value) if value else None


def whole(env: Environ, name: str, default: int, minimum: int | None = None) -> int:
    """A whole number (at least `minimum`)."""
    value = env.get(name, "").strip() or str(default)
    try:
        number = int(value)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number, not {value!r}") from None
    if minimum is not None and number < minimum:
        raise SystemExit(f"{name} must be at least {minimum}, not {value}")
    return number


def number(env: Environ, name: str, default: float) -> float:
    value = env.get(name, "").strip() or str(default)
    try:
        return float(value)
    except ValueError:
        raise SystemExit(f"{name} must be a number, not {value!r}") from None


def period(env: Environ, name: str, default: float, positive: bool = False) -> timedelta:
    """A period in seconds: 0 or more (more than 0 with `positive`)."""
    value = env.get(name, "").strip() or str(default)
    try:
        seconds = float(value)
    except ValueError:
        raise SystemExit(f"{name} must be a number of seconds, not {value!r}") from None
    if seconds < 0 or (positive and seconds == 0):
        raise SystemExit(f"{name} must be {'more than' if positive else 'at least'} 0 seconds, not {value}")
    return timedelta(seconds=seconds)


def days(value: str, name: str) -> timedelta | None:
    """A validity in days, or `never`."""
    if value.strip().lower() == "never":
        return None
    try:
        count = float(value)
    except ValueError:
        raise SystemExit(f"{name} must be a number of days or 'never', not {value!r}") from None
    if count <= 0:
        raise SystemExit(f"{name} must be more than 0 days (or 'never')")
    return timedelta(days=count)


def cap(env: Environ, name: str, default: int | None) -> int | None:
    """A referral cap: invited users an inviter is rewarded for, or `none` for no cap."""
    value = env.get(name, "").strip().lower()
    if not value:
        return default
    if value == "none":
        return None
    if not value.isdigit():
        raise SystemExit(f"{name} must be a number of invited users or `none`, not {value!r}")
    return int(value)
