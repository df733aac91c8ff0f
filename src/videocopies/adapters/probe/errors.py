"""Why a file was refused: as a source (not a video, unusable, corrupt) or as a rendered copy."""

from __future__ import annotations

import attrs

from videocopies.application.errors import UnusableMedia


@attrs.define
class MediaRejected(UnusableMedia):
    """A file we cannot work with; `reason` is one line a user or an operator can read."""

    def __str__(self) -> str:
        return f"{type(self).__name__}: {self.reason}"


@attrs.define
class NotAVideo(MediaRejected):
    """Empty, unrecognised, a still image, audio only, or a single frame."""


@attrs.define
class InvalidMedia(MediaRejected):
    """Looks like a video but is unusable: index missing, absurd size, no duration, too big."""


@attrs.define
class SourceTooBig(InvalidMedia):
    """More bytes than the limit: refused before the file is opened."""


@attrs.define
class SourceTooLong(InvalidMedia):
    """Lasts longer than the limit, by its header or by its packets' timestamps."""


@attrs.define
class FrameTooLarge(InvalidMedia):
    """A side, or the pixels a second (width × height × frame rate), over the limit."""


@attrs.define
class CorruptMedia(MediaRejected):
    """The container opens, but the data is cut short or does not decode."""


@attrs.define
class ProbeTimedOut(MediaRejected):
    """Decoding took longer than the time budget allows (a busy machine, perhaps: not final)."""

    permanent = False


@attrs.define
class CopyRejected(MediaRejected):
    """A rendered copy failed verification; the copy must not be delivered."""
