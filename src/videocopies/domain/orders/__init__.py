"""Orders: from quote to done, cancelled or failed, paid copy by delivered copy."""

from videocopies.domain.orders.order import (
    FINAL_STATES,
    CopyNotRendered,
    CopyReady,
    CopyState,
    NoSuchCopy,
    Order,
    OrderClosed,
    OrderConfirmed,
    OrderCopy,
    OrderNotInState,
    OrderState,
)

__all__ = [
    "FINAL_STATES", "CopyNotRendered", "CopyReady", "CopyState", "NoSuchCopy", "Order",
    "OrderClosed", "OrderConfirmed", "OrderCopy", "OrderNotInState", "OrderState",
]
