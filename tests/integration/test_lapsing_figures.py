"""Core's /metrics shows how many sent quotes wait for their Confirm to be taken off
(videocopies_buttons_lapsing, read from the database at scrape time, the same on every core):
one more when a quote is reported sent, one fewer when its button lapses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families

from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.adapters.postgres.figures import read_figures
from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.adapters.postgres.pool import make_pool
from videocopies.application.ports import OutboxMessage
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres


async def test_the_buttons_waiting_to_lapse_are_shown_and_go_down_when_one_lapses(
    pg_server: LocalPostgres, database: str
) -> None:
    pool = make_pool(pg_server.url(database), max_size=2)
    await pool.open(wait=True)
    try:
        metrics, outbox = CoreMetrics(lambda: read_figures(pool)), PostgresOutboxQueue(pool)

        async def waiting() -> float:
            text = (await metrics.render()).decode()
            return next(s.value for f in text_string_to_metric_families(text) for s in f.samples
                        if s.name == "videocopies_buttons_lapsing")

        expires = datetime.now(UTC) + timedelta(minutes=10)
        await outbox.queue([
            OutboxMessage(UserId(user), "screen", {"screen": "quote", "copies": 5, "total": 20,
                                                   "expires_at": expires.isoformat()}, f"quote:{user}")
            for user in (1, 2)
        ])
        assert await waiting() == 0  # not sent yet: no message to take the button off
        first, second = await outbox.claim(datetime.now(UTC), 10)
        await outbox.sent_many([(first.message_id, {"message_id": 11}), (second.message_id, {"message_id": 12})])
        assert await waiting() == 2
        assert await outbox.lapse_buttons(expires, limit=1) == 1
        assert await waiting() == 1
    finally:
        await pool.close()
