"""The user cancels: nothing more is charged, and the rest comes back once the worker stops."""

from __future__ import annotations

import attrs

from videocopies.application.ports import Clock
from videocopies.application.use_cases._common import UowFactory, load_order, settle
from videocopies.application.use_cases.joined import new_or_joined
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import OrderId, UserId


@attrs.frozen
class CancelOrderCommand:
    user_id: UserId
    order_id: OrderId


class CancelOrder:
    """Cancel is a protocol: a queued job closes at once and its coins return; a running
    one is asked to stop, and the coins return when its worker acknowledges (or its
    lease runs out). Either way, undelivered copies are never charged."""

    def __init__(self, uow: UowFactory, clock: Clock) -> None:
        self._uow, self._clock = uow, clock

    async def __call__(self, cmd: CancelOrderCommand) -> OrderState:
        now = self._clock.now()
        async with new_or_joined(self._uow) as uow:
            # Job before order before account, the order every use case locks them in.
            job = await uow.jobs.for_order(cmd.order_id)
            order = await load_order(uow, cmd.order_id, cmd.user_id)
            if order.is_final:
                return order.state
            order.request_cancel()
            if job is None or job.request_cancel():
                await settle(uow, order, order.finish_cancel(), now)
            await uow.commit()
            return order.state
