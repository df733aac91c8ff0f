"""In-memory adapters, shipped in the package for tests and the demo; contract tests keep
them honest against the real ones."""

from videocopies.adapters.memory.clock import ManualClock
from videocopies.adapters.memory.ids import SequentialIds
from videocopies.adapters.memory.notifier import InProcessNotifier
from videocopies.adapters.memory.payments import InMemoryPaymentProvider
from videocopies.adapters.memory.unit_of_work import InMemoryStore, InMemoryUnitOfWork

__all__ = [
    "InMemoryPaymentProvider", "InMemoryStore", "InMemoryUnitOfWork", "InProcessNotifier",
    "ManualClock", "SequentialIds",
]
