"""Referral coins cannot be farmed with fake accounts: a hundred users who open the bot through
one invite link (sent through core's real edge API, handled by the real bot on PostgreSQL)
and never order bring nobody a coin; invited users who do order are rewarded up to the
inviter's caps, exactly, even when their first orders are confirmed at the same moment."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from videocopies.application import use_cases as uc
from videocopies.domain.coins import GrantRules, LotKind, ReferralCaps
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres

from .tokens_core import CoreApi, core_serving

INVITER = 7000
CAPS = ReferralCaps(total=6, per_day=4)


async def _start(api: CoreApi, users: list[int], text: str, first_update: int) -> None:
    events = [{"update_id": first_update + n, "user": {"id": user, "first_name": f"fake{n}"}, "kind": "text",
               "text": text} for n, user in enumerate(users)]
    async with api.client("edge-1") as edge:
        assert (await edge.post("/v1/inbox", json={"events": events})).status_code == 200
    last = first_update + len(users) - 1
    await api.until("SELECT 1 FROM inbox WHERE update_id = %s AND processed_at IS NOT NULL", last, timeout=60)
    await api.until("SELECT count(*) FROM inbox WHERE update_id >= %s AND processed_at IS NULL HAVING count(*) = 0",
                    first_update, timeout=60)


async def _referral_coins(api: CoreApi, user: int) -> int:
    rows = await api.rows("SELECT coalesce(sum(amount), 0) FROM coin_lots WHERE user_id = %s AND kind = 'referral'",
                          user)
    return int(rows[0][0])


async def _order(api: CoreApi, user: int) -> None:
    cases = api.core.container.use_cases
    quote = await cases.quote_order()(uc.QuoteOrderCommand(UserId(user), f"sources/{user}/clip.mp4", 1))
    await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(user), quote.quote_id, quote.token))


async def test_a_hundred_fake_invitees_bring_nothing_and_the_cap_holds_for_those_who_order(
    pg_server: LocalPostgres, database: str
) -> None:
    async with core_serving(pg_server.url(database), grants=GrantRules(referral_caps=CAPS)) as api:
        await _start(api, [INVITER], "/start", 1)
        fakes = [INVITER + 1 + n for n in range(100)]
        await _start(api, fakes, f"/start ref_{INVITER}", 100)
        assert len(await api.rows("SELECT 1 FROM referrals WHERE inviter = %s", INVITER)) == 100
        assert await _referral_coins(api, INVITER) == 0
        assert sum([await _referral_coins(api, user) for user in fakes]) == 0

        # Eight of them confirm a first order at once: the daily cap holds exactly.
        await asyncio.gather(*(_order(api, user) for user in fakes[:8]))
        assert await _referral_coins(api, INVITER) == 30 * CAPS.per_day  # type: ignore[operator]
        rewarded = [await _referral_coins(api, user) for user in fakes[:8]]
        assert sorted(rewarded) == [0] * (8 - CAPS.per_day) + [30] * CAPS.per_day  # type: ignore[operator]
        outcomes = await api.rows("SELECT outcome, count(*) FROM referrals GROUP BY 1 ORDER BY 1")
        assert outcomes == [("capped", 4), ("rewarded", 4), (None, 92)]

        # A day later only the total cap is left: two more, then nothing.
        await api.rows("UPDATE referrals SET settled_at = settled_at - interval '25 hours' RETURNING 1")
        for user in fakes[8:12]:
            await _order(api, user)
        assert await _referral_coins(api, INVITER) == 30 * CAPS.total  # type: ignore[operator]
        assert await api.rows("SELECT count(*) FROM coin_lots WHERE kind = 'referral'") == [(2 * CAPS.total,)]  # type: ignore[operator]


async def test_a_referral_pays_nothing_until_the_first_order_even_with_a_start_bonus_of_zero(
    pg_server: LocalPostgres, database: str
) -> None:
    rules = GrantRules(start_bonus=0, referral_caps=CAPS)
    async with core_serving(pg_server.url(database), grants=rules) as api:
        cases = api.core.container.use_cases
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(INVITER), LotKind.MANUAL, 5, timedelta(days=1)))
        await _start(api, [INVITER + 1], f"/start ref_{INVITER}", 1)
        assert await _referral_coins(api, INVITER) == 0
        await cases.grant_coins()(uc.GrantCoinsCommand(UserId(INVITER + 1), LotKind.MANUAL, 5, timedelta(days=1)))
        await _order(api, INVITER + 1)
        assert await _referral_coins(api, INVITER) == 30 and await _referral_coins(api, INVITER + 1) == 30
