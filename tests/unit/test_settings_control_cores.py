"""Control reads every core: VIDEOCOPIES_CORE_URLS names them, and a deployment that names its
one core in VIDEOCOPIES_CORE_URL keeps working."""

from __future__ import annotations

import pytest

from videocopies.settings.control import ControlSettings

PASSWORD = {"VIDEOCOPIES_CONTROL_PASSWORD": "long enough"}


@pytest.mark.parametrize(("env", "cores"), [
    ({}, ()),
    ({"VIDEOCOPIES_CORE_URL": "https://core:8700/"}, ("https://core:8700",)),
    ({"VIDEOCOPIES_CORE_URLS": "https://core-a:8700, https://core-b:8700,"}, ("https://core-a:8700", "https://core-b:8700")),
    ({"VIDEOCOPIES_CORE_URLS": "https://core-a:8700,https://core-a:8700/"}, ("https://core-a:8700",)),
    ({"VIDEOCOPIES_CORE_URLS": "https://core-a:8700,https://core-b:8700", "VIDEOCOPIES_CORE_URL": "https://lb:8700"},
     ("https://core-a:8700", "https://core-b:8700")),
    ({"VIDEOCOPIES_CORE_URLS": "", "VIDEOCOPIES_CORE_URL": "https://core:8700"}, ("https://core:8700",)),
    ({"VIDEOCOPIES_CORE_URL": "https://core-a:8700,https://core-b:8700"}, ("https://core-a:8700", "https://core-b:8700")),
])
def test_the_cores_the_panel_reads(env: dict[str, str], cores: tuple[str, ...]) -> None:
    settings = ControlSettings.from_env({**PASSWORD, **env})
    assert settings.core_urls == cores
    assert settings.core_url == (cores[0] if cores else None)  # the header's link to core's /metrics
