"""What `videocopies control` reads from the environment (docs/operations.md names each variable)."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from videocopies.adapters.http.control.login_limits import LoginLimits
from videocopies.adapters.http.core_choice import core_urls
from videocopies.settings.parse import Environ, number, optional, path, text, whole

DEFAULT_INVENTORY = "var/control/inventory.sqlite3"


def login_limits_from_env(env: Environ) -> LoginLimits:
    """At most VIDEOCOPIES_CONTROL_LOGIN_FAILURES wrong passwords (5) from one address and
    VIDEOCOPIES_CONTROL_LOGIN_ACCOUNT_FAILURES (20) from all together in
    VIDEOCOPIES_CONTROL_LOGIN_WINDOW_S (900) seconds."""
    try:
        return LoginLimits(
            per_address=whole(env, "VIDEOCOPIES_CONTROL_LOGIN_FAILURES", 5),
            per_account=whole(env, "VIDEOCOPIES_CONTROL_LOGIN_ACCOUNT_FAILURES", 20),
            window_s=number(env, "VIDEOCOPIES_CONTROL_LOGIN_WINDOW_S", 900),
        )
    except ValueError as bad:
        raise SystemExit(
            f"videocopies control: sign-in limits are counts of 1 or more and a window in seconds: {bad}"
        ) from None


def core_urls_from_env(env: Environ) -> tuple[str, ...]:
    """VIDEOCOPIES_CORE_URLS, or else VIDEOCOPIES_CORE_URL: addresses separated by commas, each once."""
    value = optional(env, "VIDEOCOPIES_CORE_URLS") or optional(env, "VIDEOCOPIES_CORE_URL") or ""
    return tuple(dict.fromkeys(core_urls(value)))


@attrs.frozen
class ControlSettings:
    """Control's process: VIDEOCOPIES_CONTROL_PASSWORD (the panel shows users' ledgers: 8
    characters or more, checked by the role), VIDEOCOPIES_CONTROL_HOST / _PORT
    (127.0.0.1:8800), VIDEOCOPIES_CONTROL_INVENTORY (its SQLite server inventory),
    VIDEOCOPIES_CORE_URLS (optional: every core's address, separated by commas, each read for
    the storage page, the first linked for its /metrics; with two cores, each knows only the nodes
    that called it, so give each core's own address, not a balancer's), or VIDEOCOPIES_CORE_URL
    when there is one core (read only when VIDEOCOPIES_CORE_URLS is unset; commas separate cores
    there too, as for edge and the workers), VIDEOCOPIES_CORE_CA for cores served with a private
    CA, and the sign-in limits."""

    password: str = attrs.field(repr=False)
    inventory: Path = Path(DEFAULT_INVENTORY)
    host: str = "127.0.0.1"
    port: int = 8800
    core_urls: tuple[str, ...] = ()
    core_ca: str | None = None
    login_limits: LoginLimits = attrs.field(factory=LoginLimits)  # counts failures: one per process

    @property
    def core_url(self) -> str | None:
        """The core the panel's header links to for its /metrics."""
        return self.core_urls[0] if self.core_urls else None

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> ControlSettings:
        env = os.environ if environ is None else environ
        return cls(
            password=text(env, "VIDEOCOPIES_CONTROL_PASSWORD"),
            inventory=path(env, "VIDEOCOPIES_CONTROL_INVENTORY", DEFAULT_INVENTORY),
            host=text(env, "VIDEOCOPIES_CONTROL_HOST", "127.0.0.1"), port=whole(env, "VIDEOCOPIES_CONTROL_PORT", 8800),
            core_urls=core_urls_from_env(env), core_ca=optional(env, "VIDEOCOPIES_CORE_CA"),
            login_limits=login_limits_from_env(env),
        )
