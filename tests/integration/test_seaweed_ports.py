"""`weed mini` started on ports chosen free: one taken before weed binds it is chosen again."""

from __future__ import annotations

import socket

import pytest

from videocopies.embedded import seaweedfs
from videocopies.embedded.seaweedfs import LocalSeaweed


def test_a_port_taken_between_choosing_and_binding_is_chosen_again(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    chosen: list[list[int]] = []
    real = seaweedfs._free_ports

    def first_one_taken(count: int) -> list[int]:
        ports = real(count)
        if not chosen:  # as if another process took the filer's port just after it was chosen
            ports[list(seaweedfs._PORTS).index("filer.port")] = taken.getsockname()[1]
        chosen.append(ports)
        return ports

    monkeypatch.setattr(seaweedfs, "_free_ports", first_one_taken)
    try:
        with LocalSeaweed() as store:
            assert len(chosen) == 2 and store.ports == dict(zip(seaweedfs._PORTS, chosen[1], strict=True))
    finally:
        taken.close()
