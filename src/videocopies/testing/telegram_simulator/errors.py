"""What the simulator refuses: Bot API errors as Telegram words them, and user-side refusals."""

from __future__ import annotations

import attrs

QUERY_TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"
CHAT_NOT_FOUND = "Bad Request: chat not found"
WRONG_FILE_ID = "Bad Request: wrong file identifier/HTTP URL specified"  # sending by an unknown file_id
WRONG_FILE_ID_OR_UNAVAILABLE = "Bad Request: wrong file_id or the file is temporarily unavailable"  # getFile
MESSAGE_TO_EDIT_NOT_FOUND = "Bad Request: message to edit not found"
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly "
    "the same as a current content and reply markup of the message"
)
WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
)
OTHER_GETUPDATES = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"


@attrs.define
class BotApiError(Exception):
    """A refusal the Bot API answers with `{"ok": false, ...}`."""

    error_code: int
    description: str
    retry_after: int | None = None

    def to_json(self) -> dict:
        body: dict = {"ok": False, "error_code": self.error_code, "description": self.description}
        if self.retry_after is not None:
            body["parameters"] = {"retry_after": self.retry_after}
        return body


# What the Bot API answers when it fails itself (a call to retry): the simulator's injected faults.
BAD_GATEWAY_ANSWER = {"ok": False, "error_code": 502, "description": "Bad Gateway"}


def bad_request(detail: str) -> BotApiError:
    return BotApiError(400, f"Bad Request: {detail}")


def forbidden(detail: str) -> BotApiError:
    return BotApiError(403, f"Forbidden: {detail}")


@attrs.define
class UserActionRefused(Exception):
    """A simulated user tried something the Telegram app would not let them do."""

    reason: str

    def __str__(self) -> str:
        return self.reason
