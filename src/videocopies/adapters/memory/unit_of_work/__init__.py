"""The in-memory unit of work, by concern: `session` (the transaction), `aggregates` (accounts,
orders, jobs with their version checks), `records` (rows written once); the committed state is
`adapters.memory.store`."""

from videocopies.adapters.memory.store import InMemoryStore
from videocopies.adapters.memory.unit_of_work.session import InMemoryUnitOfWork

__all__ = ["InMemoryStore", "InMemoryUnitOfWork"]
