"""What the control panel reads and writes through: the read model, the inventory, sessions,
and the optional figures of the object store and of core."""

from __future__ import annotations

import attrs

from videocopies.adapters.http.control.login_limits import LoginLimits
from videocopies.adapters.http.control.sessions import PanelSessions
from videocopies.application.ports import Clock, ControlReadModel, CoreFigures, ObjectTallies, ServerInventory


@attrs.frozen
class ControlServices:
    read_model: ControlReadModel
    inventory: ServerInventory
    sessions: PanelSessions
    clock: Clock
    core_url: str | None = None  # linked for its /metrics; the panel never depends on it
    login_delay_s: float = 1.0  # a wrong password waits: guessing costs time
    login_limits: LoginLimits = attrs.field(factory=LoginLimits)
    objects: ObjectTallies | None = None  # the store's objects by kind and state, from their rows
    core_figures: CoreFigures | None = None  # the store's disk and the nodes' scratch, as core knows them
