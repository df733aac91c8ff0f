"""Checking node tokens: unknown ids cost at most one reload of the live nodes per period,
shared by every request waiting for it; a node issued meanwhile is still found."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from videocopies.adapters.memory import ManualClock
from videocopies.application.nodes import IssueNodeToken, NodeAuthenticator
from videocopies.application.ports import Node


class CountedRegistry:
    """Node identities in a dict, counting the reads a database would answer."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.reads = 0

    async def add(self, node: Node) -> None:
        self.nodes[node.node_id] = node

    async def revoke(self, name: str, at: datetime) -> bool:
        raise AssertionError("not revoked here")

    async def get(self, node_id: str) -> Node | None:
        self.reads += 1
        return self.nodes.get(node_id)

    async def live(self) -> Sequence[Node]:
        self.reads += 1
        await asyncio.sleep(0.01)  # a query takes a while: requests arriving meanwhile share it
        return [node for node in self.nodes.values() if node.live]

    async def seen(self, last_contact: Mapping[str, datetime]) -> None:
        pass


async def _started(registry: CountedRegistry, clock: ManualClock) -> NodeAuthenticator:
    authenticator = NodeAuthenticator(registry, clock, unknown_reload_s=10.0, remembered_unknown=100)
    await authenticator.reload()
    registry.reads = 0
    return authenticator


async def test_a_flood_of_random_ids_costs_one_read_per_period() -> None:
    registry, clock = CountedRegistry(), ManualClock()
    authenticator = await _started(registry, clock)
    tokens = [f"{secrets.token_hex(8)}.{secrets.token_hex(32)}" for _ in range(10_000)]

    answers = await asyncio.gather(*(authenticator.authenticate(token) for token in tokens[:5000]))
    clock.advance(timedelta(seconds=5))
    answers += [await authenticator.authenticate(token) for token in tokens[5000:]]

    assert answers == [None] * 10_000
    assert registry.reads == 1


async def test_an_id_a_reload_did_not_find_is_refused_without_another() -> None:
    registry, clock = CountedRegistry(), ManualClock()
    authenticator = await _started(registry, clock)
    revoked = f"{secrets.token_hex(8)}.{secrets.token_hex(32)}"
    assert await authenticator.authenticate(revoked) is None
    for _ in range(5):
        clock.advance(timedelta(seconds=10))
        assert await authenticator.authenticate(revoked) is None
    assert registry.reads == 1


async def test_a_node_issued_without_news_is_found_by_the_next_reload() -> None:
    registry, clock = CountedRegistry(), ManualClock()
    authenticator = await _started(registry, clock)
    assert await authenticator.authenticate("0123456789abcdef.nope") is None  # a reload was spent
    issued = await IssueNodeToken(registry, clock, secrets.token_hex)("worker-late", "worker")

    assert await authenticator.authenticate(issued.token) is None  # within the period: not yet
    clock.advance(timedelta(seconds=10))
    found = await authenticator.authenticate(issued.token)

    assert found is not None and found.name == "worker-late"
    assert registry.reads == 2


async def test_news_of_a_node_forgets_the_ids_refused_before() -> None:
    registry, clock = CountedRegistry(), ManualClock()
    authenticator = await _started(registry, clock)
    issued = await IssueNodeToken(registry, clock, secrets.token_hex)("worker-a", "worker")
    await authenticator.authenticate(issued.token)  # found by the reload for unknown ids
    refused_before = f"{secrets.token_hex(8)}.x"
    assert await authenticator.authenticate(refused_before) is None

    await authenticator.reload()  # what a NOTIFY does

    assert refused_before not in authenticator._unknown
    assert (await authenticator.authenticate(issued.token)) is not None


async def test_a_node_whose_news_came_is_let_in_before_that_news_is_acted_on() -> None:
    """Its token used the moment it was issued, after a flood spent the period's reload: the
    reload the news asked for is waited for, once for every caller, and lets it in."""
    registry, clock = CountedRegistry(), ManualClock()
    authenticator = await _started(registry, clock)
    assert await authenticator.authenticate("0123456789abcdef.nope") is None  # the period's reload spent
    issued = await IssueNodeToken(registry, clock, secrets.token_hex)("worker-late", "worker")

    authenticator.nodes_changed()  # the NOTIFY came; the refresh task has not run yet
    found = await asyncio.gather(*(authenticator.authenticate(issued.token) for _ in range(20)))

    assert [node.name if node else None for node in found] == ["worker-late"] * 20
    assert registry.reads == 2
    assert await authenticator.authenticate("fedcba9876543210.nope") is None  # news acted on: no more reads
    assert registry.reads == 2


async def test_the_remembered_unknown_ids_are_bounded() -> None:
    registry, clock = CountedRegistry(), ManualClock()
    authenticator = await _started(registry, clock)
    for _ in range(150):
        clock.advance(timedelta(seconds=10))
        await authenticator.authenticate(f"{secrets.token_hex(8)}.x")
    assert registry.reads == 150
    assert len(authenticator._unknown) == 100
