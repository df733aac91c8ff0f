"""How a process reaches what it does not run: core's API (edge, worker), the bot on Telegram
(edge, and core or `payments` for the payment provider), the object store (core)."""

from __future__ import annotations

from pathlib import Path

import attrs

from videocopies.settings.parse import Environ, flag, optional

DEFAULT_CORE_URL = "http://127.0.0.1:8700"


@attrs.frozen
class CoreLink:
    """VIDEOCOPIES_CORE_URL (one core or balancer, or several cores separated by commas, tried
    in order when one fails), the node's token (VIDEOCOPIES_NODE_TOKEN or the file named by
    VIDEOCOPIES_NODE_TOKEN_FILE), VIDEOCOPIES_CORE_CA (a private CA),
    VIDEOCOPIES_ALLOW_PLAIN_HTTP=1 (http to a host other than loopback) and the node's
    VIDEOCOPIES_WORK_DIR, where a relocation it learns is kept (unset: the role's default work
    directory)."""

    url: str
    token: str = attrs.field(repr=False)
    ca_file: str | None = None
    allow_plain_http: bool = False
    work_dir: Path | None = None

    @classmethod
    def from_env(cls, env: Environ) -> CoreLink:
        token = env.get("VIDEOCOPIES_NODE_TOKEN") or ""
        if not token and (path := env.get("VIDEOCOPIES_NODE_TOKEN_FILE")):
            token = Path(path).read_text().strip()
        if not token:
            raise SystemExit(
                "set VIDEOCOPIES_NODE_TOKEN (or VIDEOCOPIES_NODE_TOKEN_FILE): `videocopies nodes add` issues one"
            )
        return cls(
            url=env.get("VIDEOCOPIES_CORE_URL") or DEFAULT_CORE_URL, token=token,
            ca_file=optional(env, "VIDEOCOPIES_CORE_CA"), allow_plain_http=flag(env, "VIDEOCOPIES_ALLOW_PLAIN_HTTP"),
            work_dir=Path(work_dir) if (work_dir := optional(env, "VIDEOCOPIES_WORK_DIR")) else None,
        )


@attrs.frozen
class BotLink:
    """VIDEOCOPIES_BOT_TOKEN (None: no bot), VIDEOCOPIES_TELEGRAM_URL (a Bot API server other
    than Telegram's) with VIDEOCOPIES_TELEGRAM_LOCAL=1 for a local one, and
    VIDEOCOPIES_TELEGRAM_PROXY (http://, socks5://) for every Bot API call."""

    token: str | None = attrs.field(default=None, repr=False)
    api_url: str | None = None
    local: bool = False
    proxy: str | None = None

    @classmethod
    def from_env(cls, env: Environ) -> BotLink:
        return cls(
            token=optional(env, "VIDEOCOPIES_BOT_TOKEN"), api_url=optional(env, "VIDEOCOPIES_TELEGRAM_URL"),
            local=flag(env, "VIDEOCOPIES_TELEGRAM_LOCAL"), proxy=optional(env, "VIDEOCOPIES_TELEGRAM_PROXY"),
        )


@attrs.frozen
class S3Link:
    """VIDEOCOPIES_S3_ENDPOINT (unset: no S3), _BUCKET, _ACCESS_KEY, _SECRET_KEY."""

    endpoint: str
    bucket: str
    access_key: str
    secret_key: str = attrs.field(repr=False)

    @classmethod
    def from_env(cls, env: Environ) -> S3Link | None:
        if not (endpoint := env.get("VIDEOCOPIES_S3_ENDPOINT")):
            return None
        missing = [name for name in ("BUCKET", "ACCESS_KEY", "SECRET_KEY") if f"VIDEOCOPIES_S3_{name}" not in env]
        if missing:
            raise SystemExit(f"VIDEOCOPIES_S3_ENDPOINT is set: set VIDEOCOPIES_S3_{missing[0]} too")
        return cls(endpoint, env["VIDEOCOPIES_S3_BUCKET"], env["VIDEOCOPIES_S3_ACCESS_KEY"],
                   env["VIDEOCOPIES_S3_SECRET_KEY"])
