"""What a Telegram update means to core: the inbox event edge stores for it. Updates are the
Bot API's JSON, read as little as it takes; what edge cannot make sense of still becomes an
event, unreadable, so the user is answered and it is counted."""

from __future__ import annotations

import re
from typing import Any

VIDEO_TYPES_TO_PROBE = ("video/", "application/octet-stream")
# The callback data the bot's buttons carry (adapters/screens/render.py), those of older releases
# included: anything else is a button no release of the bot meant, answered by edge at once.
_BUTTONS = re.compile(r"n:\d+(:[A-Za-z0-9._-]+)?|c:[^:]+:\d+:\d+:.+|x:.+|buy|l:[a-z]{2}|b:\d+|h:.+")


def known_button(data: Any) -> bool:
    return isinstance(data, str) and _BUTTONS.fullmatch(data) is not None


def event_of(update: dict[str, Any], download_limit: int) -> dict[str, Any] | None:
    """The inbox event an update makes (None: nothing core acts on); core judges every field
    again on its own."""
    update_id = update["update_id"]
    if (query := update.get("callback_query")) is not None:
        user = user_of(query["from"])
        data = query.get("data")
        if not isinstance(data, str) or not data:
            return unreadable(update, "a button without data", user)
        pressed_under = (query.get("message") or {}).get("message_id")  # the message the button is on
        return {"update_id": update_id, "user": user, "kind": "button", "data": data, "message_id": pressed_under}
    if "message" not in update:
        return None  # a kind we did not ask for
    message = update["message"]
    if not isinstance(message, dict):
        return unreadable(update, "a message that is not an object")
    if message.get("from") is None:
        return None  # a message from no one (a channel post forwarded into a chat)
    user = user_of(message["from"])
    if (paid := message.get("successful_payment")) is not None:
        payment = {"charge_id": paid["telegram_payment_charge_id"], "total_amount": paid["total_amount"],
                   "currency": paid["currency"], "invoice_payload": paid["invoice_payload"]}
        return {"update_id": update_id, "user": user, "kind": "payment", "payment": payment}
    media = message.get("video") or message.get("document")
    if (note := message.get("video_note")) is not None:  # a round video: a square one, `length` on a side
        media = {**note, "width": note.get("length"), "height": note.get("length"), "mime_type": "video/mp4"}
    if media is not None:
        return {"update_id": update_id, "user": user, "kind": "video", "video": _video(media, download_limit)}
    if (other := _not_a_video(message)) is not None:  # core answers with what to send instead
        return {"update_id": update_id, "user": user, "kind": "video", "video": other}
    content = message.get("text")
    if content is None:
        content = ""  # a sticker, a photo, a voice: core answers with help
    if not isinstance(content, str):
        return unreadable(update, "text that is not a string", user)
    return {"update_id": update_id, "user": user, "kind": "text", "text": content[:4096]}


def _not_a_video(message: dict[str, Any]) -> dict[str, Any] | None:
    """A picture or a sound sent instead of a video, as a video refused for what it is (its
    type says which): nothing is fetched."""
    for field, mime in (("photo", "image/jpeg"), ("sticker", "image/webp"), ("voice", "audio/ogg"),
                        ("audio", "audio/mpeg")):
        media = message.get(field)
        if isinstance(media, list):  # a photo comes in sizes, the largest last
            media = media[-1] if media else None
        if isinstance(media, dict) and isinstance(media.get("file_id"), str):
            return {"file_id": media["file_id"], "file_unique_id": media.get("file_unique_id"),
                    "size": int(media.get("file_size") or 0), "duration_s": 0.0, "width": 0, "height": 0, "fps": 0.0,
                    "mime_type": mime, "source_key": None, "sha256": None, "refusal": "not_a_video",
                    "probed": False, "fetching": False}
    return None


def _video(media: dict[str, Any], download_limit: int) -> dict[str, Any]:
    size = media.get("file_size") or 0
    mime = media.get("mime_type")
    video: dict[str, Any] = {
        "file_id": media["file_id"], "file_unique_id": media.get("file_unique_id"), "size": size,
        "duration_s": float(media.get("duration") or 0), "width": int(media.get("width") or 0),
        "height": int(media.get("height") or 0), "fps": 0.0, "mime_type": mime,
        "source_key": None, "sha256": None, "refusal": None, "probed": False, "fetching": True,
    }
    if mime is not None and not str(mime).startswith(VIDEO_TYPES_TO_PROBE):
        video.update(refusal="not_a_video", fetching=False)
    elif size > download_limit:
        video.update(refusal="too_big", fetching=False)  # Telegram would refuse getFile: nothing to fetch
    return video


def unreadable(update: Any, reason: str, user: dict[str, Any] | None = None) -> dict[str, Any] | None:
    if not isinstance(update, dict) or not is_update_id(update.get("update_id")):
        return None
    if user is None:
        with_user = update.get("message") or update.get("callback_query") or {}
        try:
            user = user_of(with_user["from"])
        except Exception:  # noqa: BLE001 - no readable user: counted, nobody to answer
            user = None
    event: dict[str, Any] = {"update_id": update["update_id"], "kind": "unreadable", "reason": reason[:200]}
    if user is not None:
        event["user"] = user
    return event


def user_of(user: dict[str, Any]) -> dict[str, Any]:
    return {"id": user["id"], "language_code": user.get("language_code"),
            "first_name": (user.get("first_name") or "")[:256]}


def is_update_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53

