"""What the conversation says: replies keyed by their event (handled again, an event says
nothing twice), the figures of the balance screen, and the command a text starts with."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from videocopies.application.ports import InboxEvent, OutboxMessage
from videocopies.domain.coins import CoinAccount

# Buttons that mean nothing once pressed (a number of copies, a quote's Confirm, a language): the
# replies to a press on one of them take the buttons off the message it was on.
SPENT_WHEN_PRESSED = ("n:", "c:", "l:")


class Replies:
    def __init__(self, event: InboxEvent) -> None:
        self._event = event
        self.messages: list[OutboxMessage] = []
        self._count = 0
        spent = event.kind == "button" and (event.data or "").startswith(SPENT_WHEN_PRESSED)
        self._unbutton = event.message_id if spent else None

    @property
    def event(self) -> InboxEvent:
        return self._event

    def screen(self, screen: str, /, **values: Any) -> None:
        self.messages.append(self.message(screen, **values))

    def message(self, screen: str, /, **values: Any) -> OutboxMessage:
        """A reply a use case writes itself, in the transaction of the change it announces."""
        payload = {"screen": screen, **values}
        if self._unbutton is not None:  # edge takes them off before it sends this (once)
            payload["unbutton"] = self._unbutton
        return OutboxMessage(self._event.user.user_id, "screen", payload, self.key())

    def key(self) -> str:
        self._count += 1
        return f"in:{self._event.update_id}:{self._count}"


def command_of(text: str | None) -> str:
    text = (text or "").strip()
    return text.split()[0].split("@")[0].lower() if text else ""


def account_view(account: CoinAccount | None, now: datetime) -> dict[str, Any]:
    """The balance screen's figures: available, reserved, and the live lots by expiry."""
    if account is None:
        return {"available": 0, "reserved": 0, "lots": []}
    balance = account.balance(now)
    lots = [
        {"amount": lot.available, "expires_at": lot.expires_at.isoformat() if lot.expires_at else None}
        for lot in sorted(account.lots, key=lambda lot: (lot.expires_at is None, lot.expires_at or now))
        if lot.available > 0 and (lot.expires_at is None or lot.expires_at > now)
    ]
    return {"available": balance.available, "reserved": balance.reserved, "lots": lots}
