"""The user received a copy: charge it, once."""

from __future__ import annotations

import attrs

from videocopies.application.ports import Clock
from videocopies.application.use_cases._common import UowFactory, load_account, load_order
from videocopies.application.use_cases.announcements import OrderProgressed
from videocopies.domain.shared import OrderId


@attrs.frozen
class RecordDeliveryCommand:
    order_id: OrderId
    index: int


class RecordDelivery:
    """Debit one copy's price from the order's reservation the first time its delivery is
    reported; repeated reports, and copies of a cancelled order, cost nothing."""

    def __init__(self, uow: UowFactory, clock: Clock) -> None:
        self._uow, self._clock = uow, clock

    async def __call__(self, cmd: RecordDeliveryCommand) -> int:
        async with self._uow() as uow:
            order = await load_order(uow, cmd.order_id)
            price = order.record_delivery(cmd.index)
            debited = 0
            if price:
                account = await load_account(uow, order.user_id)
                debited = account.debit(order.order_id, price, key=f"copy:{cmd.index}")
                if not order.is_final:  # a closed order's message already says how it ended
                    await uow.record(OrderProgressed.of(order))
            await uow.commit()
            return debited


class GiveUpDelivery:
    """A copy that cannot reach the user (they blocked the bot, Telegram refused the file)
    is dropped, and its price goes back to the user's lots: never charged, never stuck."""

    def __init__(self, uow: UowFactory, clock: Clock) -> None:
        self._uow, self._clock = uow, clock

    async def __call__(self, cmd: RecordDeliveryCommand) -> int:
        async with self._uow() as uow:
            order = await load_order(uow, cmd.order_id)
            price = order.give_up_delivery(cmd.index)
            returned = 0
            if price:
                account = await load_account(uow, order.user_id)
                reservation = account.reservation(order.order_id)
                if reservation is not None and reservation.open:
                    returned = account.release(order.order_id, self._clock.now(), min(price, reservation.held))
            await uow.commit()
            return returned
