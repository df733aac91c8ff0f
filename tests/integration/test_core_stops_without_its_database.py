"""A core whose database has gone (a crash, an outage) still stops promptly on SIGTERM, exit 0:
its loops give up their pass as a request would (10 s), and the duties it held are handed on
together and for 2 s at most; their leases run out instead. It took 39 s when the three duties
were each waited for in turn."""

from __future__ import annotations

import os
import signal
import time

from videocopies.adapters.postgres import migrate
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess


def test_a_core_whose_database_died_stops_within_15_s_and_exits_0() -> None:
    with LocalPostgres() as pg:
        url = pg.url("videocopies")
        migrate.init(url)
        core = CoreProcess(url, quote_secret="stops-without-database" * 2)
        core.start()
        try:
            assert pg.pid is not None
            os.kill(pg.pid, signal.SIGKILL)  # the postmaster; its backends end with it
            time.sleep(1)
            asked = time.monotonic()
            assert core.process is not None
            core.process.send_signal(signal.SIGTERM)
            code = core.process.wait(timeout=60)
            took = time.monotonic() - asked
        finally:
            if core.process is not None and core.process.poll() is None:
                core.process.kill()
        said = core.process.stderr.read().decode() if core.process.stderr else ""
    assert code == 0, said[-3000:]
    assert took < 15, (took, said[-3000:])
    assert "could not hand the prune-tables duty on" in said, said[-3000:]
