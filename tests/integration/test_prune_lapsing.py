"""Pruning an expired quote and taking its Confirm off are independent: a `lapsing_buttons` row
names a Telegram message, not the order, so it neither keeps the quote's order from being pruned
nor is pruned with it; the sweep still takes the button off after the order is gone, and then
nothing of the quote is left."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.adapters.postgres.retention import PostgresTransientRows
from videocopies.adapters.system import SystemClock
from videocopies.application import use_cases as uc
from videocopies.application.lapsing import UNBUTTON
from videocopies.application.ports import OutboxMessage
from videocopies.application.retention import PruneTables
from videocopies.domain.retention import RetentionPolicy, Transient
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings

USER = 903
NOTHING_KEPT = RetentionPolicy(*(timedelta(0),) * 5)


async def test_an_expired_quote_is_pruned_while_its_button_waits_and_the_sweep_takes_the_button_off_after(
    pg_server: LocalPostgres, database: str
) -> None:
    service = PostgresService(settings=Settings(quote_secret=b"prune-lapsing-secret" * 2))
    service.gateways.config.from_dict({"database_url": pg_server.url(database), "pool_size": 2})
    pool = service.gateways.pool()
    await pool.open(wait=True)
    try:
        quoted = await service.use_cases.quote_order()(uc.QuoteOrderCommand(UserId(USER), "sources/903/a.mp4", 5))
        expired = datetime.now(UTC) - timedelta(seconds=1)
        outbox = PostgresOutboxQueue(pool)
        payload = {"screen": "quote", "copies": 5, "total": 20, "expires_at": expired.isoformat()}
        await outbox.queue([OutboxMessage(UserId(USER), "screen", payload, f"quote:{quoted.quote_id}")])
        (screen,) = await outbox.claim(datetime.now(UTC), 10)
        await outbox.sent_many([(screen.message_id, {"message_id": 77})])
        async with pool.connection() as conn:
            await conn.execute("UPDATE orders SET quote_expires_at = %s WHERE order_id = %s",
                               [expired, quoted.quote_id])

        async def count(query: str) -> int:
            async with pool.connection() as conn:
                return int((await (await conn.execute(query)).fetchone())[0])  # type: ignore[index]

        assert await count("SELECT count(*) FROM lapsing_buttons") == 1
        # The prune runs before the sweep has come round (it passes at most every 30 s).
        pruned = await PruneTables(PostgresTransientRows(pool), SystemClock(), NOTHING_KEPT)()
        assert pruned.rows[Transient.QUOTES] == 1 and pruned.finished
        assert await count("SELECT count(*) FROM orders") == 0
        assert await count("SELECT count(*) FROM lapsing_buttons") == 1  # its button is still on the screen

        assert await outbox.lapse_buttons(datetime.now(UTC)) == 1
        (unbutton,) = await outbox.claim(datetime.now(UTC), 10)
        assert (unbutton.user_id, unbutton.kind, unbutton.payload) == (USER, UNBUTTON, {UNBUTTON: 77})
        await outbox.sent_many([(unbutton.message_id, {})])
        await PruneTables(PostgresTransientRows(pool), SystemClock(), NOTHING_KEPT)()
        assert [await count(f"SELECT count(*) FROM {table}") for table in ("orders", "lapsing_buttons", "outbox")] \
            == [0, 0, 0]
    finally:
        await pool.close()
