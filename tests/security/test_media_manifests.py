"""Attack: a source that is a playlist or manifest (HLS, ffconcat, DASH) named `.mp4`, handed
to the worker's FFmpeg as is. Each points at another job's source in a sibling directory, or
at a server on this machine. The render must fail without FFmpeg opening either: the probe is
bypassed (`info=`), so only the options FFmpeg itself is given stand in the way."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hostile import manifest
from videocopies.adapters.ffmpeg import FfmpegTranscoder, SourceInfo, TranscodeFailed
from videocopies.domain.effects import EffectsPlan

KINDS = ("hls", "ffconcat", "dash")
INFO = SourceInfo(width=360, height=640, duration_s=2.0, has_audio=True, fps=25)


class OtherJobsSource:
    """Another job's source as a FIFO: a writer waits on it, so any open for reading is seen."""

    def __init__(self, path: Path) -> None:
        self.path = path
        os.mkfifo(path)
        self._over = threading.Event()
        self.opened = threading.Event()
        self._writer = threading.Thread(target=self._wait_for_a_reader, daemon=True)
        self._writer.start()

    def _wait_for_a_reader(self) -> None:
        fd = os.open(self.path, os.O_WRONLY)  # returns once someone opens the FIFO to read
        if not self._over.is_set():
            self.opened.set()
        try:
            os.write(fd, b"\0" * 65536)
        except OSError:
            pass
        finally:
            os.close(fd)

    def close(self) -> None:
        self._over.set()
        reader = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer's open return
        self._writer.join(5)
        os.close(reader)


@pytest.fixture
def other_job(tmp_path: Path) -> Iterator[OtherJobsSource]:
    (tmp_path / "job-b").mkdir()
    source = OtherJobsSource(tmp_path / "job-b" / "source.mp4")
    yield source
    source.close()


@pytest.fixture
def web() -> Iterator[tuple[str, list[str]]]:
    """A server on this machine; the list records every request it gets."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/segment.mp4", asked
    server.shutdown()
    server.server_close()


async def _render(source: Path, target: Path) -> None:
    await FfmpegTranscoder(stall_s=10, grace_s=0.5).render(
        EffectsPlan.derive(seed=1, copy_index=0), source, target, info=INFO
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("address", ["file:{path}", "{path}"])
async def test_a_manifest_cannot_make_ffmpeg_read_another_jobs_source(
    tmp_path: Path, other_job: OtherJobsSource, kind: str, address: str
) -> None:
    (job := tmp_path / "job-a").mkdir()
    (source := job / "source.mp4").write_text(manifest(kind, address.format(path=other_job.path)))

    with pytest.raises(TranscodeFailed):
        await _render(source, job / "copy.mp4")

    assert not other_job.opened.is_set()
    assert list(job.iterdir()) == [source]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_manifest_cannot_make_ffmpeg_reach_the_network(
    tmp_path: Path, web: tuple[str, list[str]], kind: str
) -> None:
    url, asked = web
    (source := tmp_path / "source.mp4").write_text(manifest(kind, url))

    with pytest.raises(TranscodeFailed):
        await _render(source, tmp_path / "copy.mp4")

    assert asked == []
    assert list(tmp_path.iterdir()) == [source]
