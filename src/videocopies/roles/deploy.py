"""`videocopies deploy core`: a new core beside the old one, the nodes moved, the old one
stopped (runtime/blue_green.py); its variables are read by settings/commands.py."""

from __future__ import annotations

import sys
from pathlib import Path

import attrs

from videocopies.runtime.blue_green import DeployRefused, deploy_behind_balancer, deploy_core
from videocopies.settings.commands import DeploySettings


def main(
    old_url: str | None, port: int | None, min_free_mb: float, log: Path | None,
    balancer: Path | None = None, server: str = "cores/core1",
) -> int:
    settings = DeploySettings.from_env()
    if old_url:  # --from
        settings = attrs.evolve(settings, old_url=old_url)
    try:
        if balancer is not None:
            deploy_behind_balancer(settings, balancer, server, port, min_free_mb, log)
        else:
            deploy_core(settings, port, min_free_mb, log)
    except DeployRefused as refused:
        print(f"videocopies deploy: {refused}", file=sys.stderr)
        return 2
    return 0
