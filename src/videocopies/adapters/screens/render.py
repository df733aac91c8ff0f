"""One outbox row as a screen: an outbox row holds what happened (a quote, a copy ready, an order
closed); the words are chosen when the row is sent, in the user's language. Buttons carry compact
callback data (Telegram allows 1-64 bytes)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from . import catalogs
from .catalogs import text
from .messages import MESSAGES, NOUNS

LANGUAGE_NAMES = {"en": "English", "ru": "Русский"}


@attrs.frozen
class Button:
    text: str
    data: str

    def __attrs_post_init__(self) -> None:
        if not 1 <= len(self.data.encode()) <= 64:
            raise ValueError(f"callback data must be 1-64 bytes: {self.data!r}")


@attrs.frozen
class Invoice:
    """A Telegram Stars invoice: one price, in XTR; `payload` names the offer."""

    title: str
    description: str
    payload: str
    label: str
    stars: int


@attrs.frozen
class Screen:
    text: str
    buttons: tuple[tuple[Button, ...], ...] = ()
    video_key: str | None = None  # send this stored object as a video, with `text` as caption
    invoice: Invoice | None = None  # send an invoice instead of a message


def _date(value: str | datetime | None) -> str:
    if value is None:
        return ""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _span(language: str, until: str | datetime, now: datetime | None = None) -> str:
    """How long until then, in the largest unit that reads well ("12 days", "5 hours", "15 minutes"),
    from when the screen is drawn; never less than a minute."""
    moment = datetime.fromisoformat(until) if isinstance(until, str) else until
    minutes = max(1, math.ceil((moment - (now or datetime.now(UTC))).total_seconds() / 60))
    if minutes < 60:
        return catalogs.words(language, NOUNS["minutes"], {"n": minutes})
    if (hours := round(minutes / 60)) < 48:
        return catalogs.words(language, NOUNS["hours"], {"n": hours})
    return catalogs.words(language, NOUNS["days"], {"n": round(hours / 24)})


def _why(t: Callable[..., str], family: str, code: Any, generic: str) -> str:
    """The words for a reason code; anything else (an unknown code, raw text from an older
    row) reads as the family's generic reason, never as itself."""
    name = f"{family}_{code}"
    return t(name if name in MESSAGES else f"{family}_{generic}")


def _progress(payload: Mapping[str, Any], t: Callable[..., str]) -> Screen:
    """An order's accepted screen as it goes: the copy being made, with a bar, and the copies delivered."""
    copies = payload["copies"]
    lines = [t("confirmed", copies=copies, total=payload["total"]), ""]
    if payload.get("index") is not None:
        percent = int(payload.get("percent") or 0)
        bar = "▰" * (percent // 10) + "▱" * (10 - percent // 10)
        lines.append(t("progress_rendering", n=payload["index"] + 1, copies=copies, bar=bar, percent=percent))
    lines.append(t("progress_delivered", delivered=payload["delivered"], copies=copies))
    return Screen("\n".join(lines), ((Button(t("cancel_button"), f"x:{payload['order_id']}"),),))


def _package_rows(packages: list[list[int]], t: Callable[..., str]) -> tuple[tuple[Button, ...], ...]:
    return tuple((Button(t("package_button", coins=coins, stars=stars), f"b:{stars}"),) for stars, coins in packages)


def _again_buttons(orders: list[dict[str, Any]], t: Callable[..., str]) -> tuple[tuple[Button, ...], ...]:
    """A button per copy delivered (the newest orders first, at most 20, two to a row): pressed,
    the copy is sent again."""
    buttons = [
        Button(t("again_button", n=index + 1, copies=o["copies"], date=_date(o["created_at"])[:10]),
               f"h:{o['order_id']}:{index}")
        for o in orders for index in o.get("delivered", [])
    ][:20]
    return tuple(tuple(buttons[i:i + 2]) for i in range(0, len(buttons), 2))


def render(kind: str, payload: Mapping[str, Any], language: str, now: datetime | None = None) -> Screen:
    """One outbox row as the user sees it (`now`: when it is drawn, the wall clock unless given)."""
    def t(name: str, /, **values: Any) -> str:
        return text(language, name, **values)

    if kind == "progress":
        return _progress(payload, t)
    if kind == "copy_ready":
        caption = t("copy_ready", n=payload["index"] + 1, copies=payload["copies"])
        return Screen(caption, video_key=payload["object_key"])
    if kind == "invoice":
        coins, stars = payload["coins"], payload["stars"]
        invoice = Invoice(t("invoice_title", coins=coins), t("invoice_description", coins=coins), payload["offer"],
                          t("invoice_title", coins=coins), stars)
        return Screen(invoice.description, invoice=invoice)
    if kind == "copy_failed":
        first = str(payload.get("reason") or "matches_source").split(",")[0]
        if first == "too_large":  # rendered once, over the upload limit: no "tries" to speak of
            return Screen(t("copy_too_large", n=payload["index"] + 1, copies=payload["copies"]))
        why = t(f"why_{first}") if f"why_{first}" in MESSAGES else t("why_unknown")
        return Screen(t("copy_failed", n=payload["index"] + 1, copies=payload["copies"], why=why,
                        tries=payload.get("tries", 3), returned=payload.get("returned", 0)))
    if kind == "order_closed":
        state = payload["state"]
        pending = payload.get("pending", 0)
        if state == "done":
            made = payload.get("made", payload["copies"])
            if made < payload["copies"]:
                return Screen(t("order_done_partly", made=made, copies=payload["copies"],
                                total=payload["charged"] + pending))
            return Screen(t("order_done", copies=payload["copies"], total=payload["charged"] + pending))
        # An order that ended early says how many copies the user got (rows from before: they did not).
        got = "\n" + t("progress_delivered", delivered=payload["delivered"], copies=payload["copies"]) \
            if payload.get("delivered") is not None else ""
        if state == "cancelled":
            return Screen(t("order_cancelled", charged=payload["charged"], released=payload["released"]) + got)
        return Screen(t("order_failed", reason=_why(t, "failure", payload.get("reason"), "unknown"),
                        charged=payload["charged"],
                        pending=t("pending", amount=pending) if pending else "", released=payload["released"]) + got)
    screen = payload["screen"]
    if screen == "welcome":
        bonus = t("bonus", amount=payload["bonus"]) if payload.get("bonus") else ""
        if payload.get("referral"):
            bonus += t("referral", amount=payload["referral"])
        name = f", {payload['name']}" if payload.get("name") else ""
        return Screen(t("welcome", name=name, available=payload["available"], bonus=bonus))
    if screen == "packages":
        return Screen(t("packages"), _package_rows(payload["packages"], t))
    if screen == "not_enough_coins":  # with the packages on sale (a row from before them: the way to /buy)
        rows = _package_rows(payload["packages"], t) if payload.get("packages") else (
            (Button(t("buy_button"), "buy"),),
        )
        return Screen(t("not_enough_coins", needed=payload["needed"], available=payload["available"]), rows)
    if screen == "coins_granted":
        reason = f" ({_why(t, 'grant', payload['reason'], 'gift')})" if payload.get("reason") else ""
        return Screen(t("coins_granted", amount=payload["amount"], reason=reason))
    if screen == "invite":  # the link names the bot by its username, when edge said it
        name = "invite" if payload.get("bot") else "invite_code"
        return Screen(t(name, user_id=payload["user_id"], amount=payload["amount"], bot=payload.get("bot") or ""))
    if screen == "cancel_too_late":  # the order's state says why nothing is cancelled
        return Screen(_why(t, "cancel_too_late", payload.get("state"), "failed"))
    if screen == "choose_copies":
        video = f":{payload['video']}" if payload.get("video") else ""  # the video the choice is for
        row = tuple(Button(t("copies_button", n=n, price=price), f"n:{n}{video}") for n, price in payload["prices"])
        return Screen(t("choose_copies"), (row,))
    if screen == "quote":
        confirm = Button(t("confirm_button", total=payload["total"]), payload["confirm_data"])
        return Screen(
            t("quote", copies=payload["copies"], per_copy=payload["per_copy"], total=payload["total"],
              expires=_span(language, payload["expires_at"], now)),
            ((confirm,),),
        )
    if screen == "confirmed":
        cancel = Button(t("cancel_button"), f"x:{payload['order_id']}")
        return Screen(t("confirmed", copies=payload["copies"], total=payload["total"]), ((cancel,),))
    if screen == "language":  # each language by its own name
        row = tuple(Button(LANGUAGE_NAMES[code], f"l:{code}") for code in payload["languages"])
        return Screen(t("language"), (row,))
    if screen == "balance":
        lines = [t("balance", available=payload["available"], reserved=payload["reserved"])]
        for lot in payload["lots"]:
            expiry = t("expires", time=_span(language, lot["expires_at"], now)) if lot["expires_at"] else t("no_expiry")
            lines.append(t("balance_lot", amount=lot["amount"], expiry=expiry))
        return Screen("\n".join(lines), ((Button(t("buy_button"), "buy"),),))
    if screen == "history":
        if not payload["orders"]:
            return Screen(t("history_empty"))
        lines = [t("history")] + [
            t("history_line", date=_date(o["created_at"]), copies=o["copies"], state=t(f"state_{o['state']}"),
              charged=o["charged"])
            for o in payload["orders"]
        ]
        again = _again_buttons(payload["orders"], t)
        return Screen("\n".join(lines + ([t("history_again")] if again else [])), again)
    if screen == "copy_again":
        return Screen(t("copy_again", n=payload["n"], copies=payload["copies"]), video_key=payload["object_key"])
    values = {key: value for key, value in payload.items() if key not in ("screen", "expires_at")}
    return Screen(t(screen, **values))
