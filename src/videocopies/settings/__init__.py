"""Every variable a role or an operator command is configured by, read here and only here, into
one typed settings object per role: `service` (the application's: prices, grants, leases,
retention), `core`, `edge`, `worker`, `control`, and `commands` (the database of the operator
commands, `deploy core`, `payments`, `copies make`, `all-in-one`); `links` says how a process
reaches core, the bot and S3; `parse` reads one variable and names it when its value is bad.
A role imports its own module (the worker's loads no database driver).

Read elsewhere, on purpose:
- FFMPEG_BINARY, by `adapters/ffmpeg/binary.py` when an FFmpeg command is built: a locator of an
  installed tool, honoured by every FFmpeg call alike (test clips and the simulator's included),
  not a setting of a role.
- VIDEOCOPIES_PG_BINDIR, VIDEOCOPIES_PG_SYSTEM, VIDEOCOPIES_PGBOUNCER, VIDEOCOPIES_WEED, by
  `embedded/`: where the installed servers are that all-in-one, tests and benchmarks start; and
  VIDEOCOPIES_PG_USER, the system user they run as under root.
- The whole environment is copied, not read, where a process starts another: `runtime/launch.py`
  (a role's child, with the variables that role needs set), `adapters/postgres/backup.py`
  (pg_dump and pg_restore, with the password moved to a passfile), `demo/bot_story.py`.
"""

from videocopies.settings.service import (
    DEFAULT_TARIFF,
    Settings,
    grant_rules_from_env,
    packages_from_env,
    pruning_from_env,
    quality_thresholds,
    quote_secrets_from_env,
)

__all__ = [
    "DEFAULT_TARIFF", "Settings", "grant_rules_from_env", "packages_from_env", "pruning_from_env",
    "quality_thresholds", "quote_secrets_from_env",
]
