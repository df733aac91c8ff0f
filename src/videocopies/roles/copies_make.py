"""`videocopies copies make INPUT -n N -o DIR`: the whole path on the embedded defaults
(runtime/local_copies.py). The copies and `report.json` land in DIR. A bad input is refused
with one line before anything is started, and nothing is left behind either way.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

import uvloop

from videocopies.adapters.probe import Limits, MediaRejected, PyAvProber
from videocopies.roles.containers import PostgresService, postgres_service
from videocopies.runtime.local_copies import MAX_INPUT_SECONDS, make
from videocopies.settings import DEFAULT_TARIFF, Settings
from videocopies.settings.commands import copies_make_memory_bytes

MAX_INPUT_BYTES = 2 * 1024**3


def _service_on(url: str) -> PostgresService:
    """A fresh quote secret: the quotes live as long as this command."""
    return postgres_service(
        Settings(quote_secret=secrets.token_bytes(32)), {"database_url": url, "pool_size": 4, "direct": True}
    )

def make_copies(source: Path, copies: int, out: Path) -> int:
    if copies not in DEFAULT_TARIFF.offered:
        print(f"videocopies copies make: -n must be one of {', '.join(map(str, DEFAULT_TARIFF.offered))}",
              file=sys.stderr)
        return 2
    if not source.is_file():
        print(f"videocopies copies make: {source}: no such file", file=sys.stderr)
        return 2
    memory_bytes = copies_make_memory_bytes()  # VIDEOCOPIES_FFMPEG_MEMORY_MB, as the worker's
    try:
        limits = Limits(max_bytes=MAX_INPUT_BYTES, max_seconds=MAX_INPUT_SECONDS)
        uvloop.run(PyAvProber(budget_s=120, limits=limits).probe(source, full_decode=True))
    except MediaRejected as rejected:
        print(f"videocopies copies make: {source.name}: {rejected.reason}", file=sys.stderr)
        return 2
    created_out = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    scratch = Path(tempfile.mkdtemp(prefix="videocopies-make-"))
    try:
        report = uvloop.run(make(source, copies, out, scratch, memory_bytes, _service_on))
        (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    except Exception as failure:  # noqa: BLE001 - one line for the user, nothing left behind
        for path in set(out.iterdir()) - before:
            path.unlink(missing_ok=True)
        if created_out:
            shutil.rmtree(out, ignore_errors=True)
        print(f"videocopies copies make: {source.name}: {failure}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for item in report["copies"]:
        if item["file"] is None:
            print(f"copy {item['copy']}: not made ({item['failed']} after {item['renders']} renders)")
            continue
        print(f"copy {item['copy']}: {item['file']}  {item['size']} bytes  sha256 {item['sha256'][:16]}…  "
              f"rendered in {item['render_seconds']} s")
    print(f"report: {out / 'report.json'}")
    return 0
