"""One setting names the Bot API server in use; the media limits follow from it."""

from __future__ import annotations

import pytest

from videocopies.telegram_limits import MIB, BotApiServer, MediaLimits, limits_env


def test_telegrams_cloud_server_fetches_20_mib_and_sends_50() -> None:
    limits = MediaLimits.from_env({})

    assert limits.server == BotApiServer(local=False, download_bytes=20 * MIB, upload_bytes=50 * MIB)
    assert (limits.max_bytes, limits.max_mb, limits.upload_bytes) == (20 * MIB, 20, 50 * MIB)
    assert (limits.max_seconds, limits.max_pixel_rate) == (180, 1920 * 1080 * 60)


def test_a_local_server_fetches_and_sends_2000_mib() -> None:
    limits = MediaLimits.from_env({"VIDEOCOPIES_TELEGRAM_LOCAL": "1"})

    assert limits.server == BotApiServer(local=True, download_bytes=2000 * MIB, upload_bytes=2000 * MIB)
    assert limits.max_bytes == 2000 * MIB


def test_max_video_mb_lowers_the_download_cap_but_never_raises_it() -> None:
    assert MediaLimits.from_env({"VIDEOCOPIES_MAX_VIDEO_MB": "8"}).max_bytes == 8 * MIB
    assert MediaLimits.from_env({"VIDEOCOPIES_MAX_VIDEO_MB": "50"}).max_bytes == 20 * MIB
    local = {"VIDEOCOPIES_TELEGRAM_LOCAL": "1"}
    assert MediaLimits.from_env({**local, "VIDEOCOPIES_MAX_VIDEO_MB": "300"}).max_bytes == 300 * MIB
    assert MediaLimits.from_env({**local, "VIDEOCOPIES_MAX_VIDEO_MB": "5000"}).max_bytes == 2000 * MIB
    with pytest.raises(ValueError, match="on this server"):
        MediaLimits(BotApiServer.cloud(), max_bytes=50 * MIB)


def test_duration_and_pixel_rate_are_set_from_the_environment() -> None:
    limits = MediaLimits.from_env({"VIDEOCOPIES_MAX_VIDEO_S": "60", "VIDEOCOPIES_MAX_PIXEL_RATE": "1000000"})

    assert (limits.max_seconds, limits.max_pixel_rate) == (60, 1_000_000)


@pytest.mark.parametrize("name", ["VIDEOCOPIES_MAX_VIDEO_MB", "VIDEOCOPIES_MAX_VIDEO_S", "VIDEOCOPIES_MAX_PIXEL_RATE"])
@pytest.mark.parametrize("value", ["0", "-5", "lots"])
def test_a_limit_that_is_not_a_positive_number_stops_the_role_with_its_name(name: str, value: str) -> None:
    with pytest.raises(SystemExit, match=name):
        MediaLimits.from_env({name: value})


def test_a_launcher_passes_on_exactly_the_variables_that_set_the_limits() -> None:
    env = {"VIDEOCOPIES_TELEGRAM_LOCAL": "1", "VIDEOCOPIES_MAX_VIDEO_S": "60", "VIDEOCOPIES_DATABASE_URL": "x"}

    passed = limits_env(env)

    assert passed == {"VIDEOCOPIES_TELEGRAM_LOCAL": "1", "VIDEOCOPIES_MAX_VIDEO_S": "60"}
    assert MediaLimits.from_env(passed) == MediaLimits.from_env(env)
