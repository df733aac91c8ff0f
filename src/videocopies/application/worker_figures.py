"""What a worker has done since it started, as it reports to core with each claim."""

from __future__ import annotations

import attrs


@attrs.define
class WorkerFigures:
    """The copies it stored, and the bytes it moved (sources downloaded, copies uploaded)."""

    copies_made: int = 0
    downloaded_bytes: int = 0
    uploaded_bytes: int = 0
