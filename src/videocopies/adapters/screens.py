"""The bot's screens in Russian and English. An outbox row holds what happened (a quote, a
copy ready, an order closed); the words are chosen when the row is sent, in the user's
language. Buttons carry compact callback data (Telegram allows 1-64 bytes).

Telegram presentation, used by core's outbox and inbox routes (adapters/http) and by edge's
receiver: beside the adapters, not inside adapters/telegram, which imports the HTTP client."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs


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


TEXTS: Mapping[str, Mapping[str, str]] = {
    "en": {
        "welcome": "Hi{name}! Send me a short video and I will make 1, 5 or 10 slightly different copies "
                   "for Reels, Shorts and TikTok.\nYou have {available} coins.{bonus}",
        "bonus": "\nA welcome gift of {amount} coins is yours.",
        "referral": "\nYou came with a friend's invite: your first order brings you {amount} more coins.",
        "packages": "Buy coins with Telegram Stars:",
        "package_button": "{coins} coins — {stars} ⭐",
        "buy_button": "Buy coins",
        "invoice_title": "{coins} coins",
        "invoice_description": "{coins} coins for making video copies.",
        "coins_credited": "Payment received: {coins} coins added. You have {available} coins available.",
        "payment_unmatched": "We received your payment of {stars} Stars but could not match it to a coin "
                             "package. Support will sort it out; nothing is lost.",
        "offer_withdrawn": "This offer has changed. Open /buy to see the current packages.",
        "payments_unavailable": "Payments are unavailable right now; nothing was charged. Please try again soon.",
        "refunded": "Your purchase of {coins} coins was refunded: {stars} Stars are on their way back.",
        "coins_granted": "You were given {amount} coins{reason}.",
        "coins_expired": "{amount} coins expired.",
        "referral_rewarded": "A friend you invited placed their first order: {amount} coins are yours.",
        "referral_invitee_rewarded": "Your first order with a friend's invite: {amount} coins are yours.",
        "payment_confirming": "Payment of {stars} Stars received: your coins follow as soon as Telegram confirms it.",
        "payment_reversed": "A payment of {stars} Stars was not confirmed by Telegram: its {coins} coins were "
                            "taken back.",
        "invite": "Invite friends with your code ref_{user_id}: when a friend who opens the bot through "
                  "t.me/<bot>?start=ref_{user_id} places a first order, they get {amount} coins, and so do you.",
        "help": "Send a video (up to {max_mb} MB and {max_s} seconds), choose how many copies, confirm the price. "
                "Each copy arrives as soon as it is ready; cancel at any time and pay only for what you got.\n"
                "/balance — your coins\n/history — your orders\n/buy — buy coins\n/invite — invite friends",
        "choose_copies": "How many copies of this video?",
        "copies_button": "{n} × {price} coins",
        "quote": "{copies} copies at {per_copy} coins each: {total} coins.\nThe price holds until {expires}.",
        "confirm_button": "Confirm — {total} coins",
        "confirmed": "Order accepted: {copies} copies, {total} coins reserved. "
                     "You pay only for copies you receive.",
        "cancel_button": "Cancel",
        "copy_ready": "Copy {n} of {copies}",
        "order_done": "All {copies} copies are ready: {total} coins, each copy charged as it arrives.",
        "order_done_partly": "{made} of {copies} copies are ready: {total} coins, each copy charged as it "
                             "arrives; nothing for the others.",
        "copy_failed": "Copy {n} of {copies} could not be made: {why}, even after {tries} tries. It is not "
                       "sent and not charged; {returned} coins returned.",
        "why_looks_different": "every version looked noticeably different from your video",
        "why_matches_source": "every version stayed too close to your video for platforms to tell apart",
        "why_matches_other_copy": "every version was almost the same as another copy of this order",
        "order_cancelled": "Cancelled. Charged {charged} coins for copies you received; {released} returned.",
        "order_failed": "Sorry, the copies could not be made ({reason}). Charged {charged} coins for copies "
                        "you received{pending}; {released} returned.",
        "pending": ", {amount} more for copies on their way",
        "cancel_requested": "Stopping… You will be charged only for copies already sent.",
        "not_enough_coins": "Not enough coins: this needs {needed}, you have {available}.",
        "quote_expired": "This price has expired. Choose the number of copies again.",
        "already_confirmed": "This order is already confirmed.",
        "busy": "We are at capacity right now. Please try again in a few minutes; nothing was charged.",
        "too_many_orders": "That is {limit} orders in the last hour, the most an hour allows. Please try again "
                           "later; nothing was charged.",
        "video_too_big": "This video is too large ({size_mb} MB). The limit is {max_mb} MB.",
        "video_too_long": "This video is too long ({seconds} s). The limit is {max_s} seconds.",
        "video_format": "This file is not a video I can work with. Send an MP4, MOV or WebM video.",
        "video_unavailable": "Telegram could not give me this file. Please send it again.",
        "video_too_sharp": "This video has more picture a second than I can work with (frame size × frame "
                           "rate). The limit is {max_mpx} megapixels a second, e.g. 1920×1080 at {fps_1080} fps.",
        "video_unchecked": "I could not check how long this video is, so I did not take it. Send it again as "
                           "a video (up to {max_s} seconds).",
        "copy_too_large": "Copy {n} of {copies} came out too large for Telegram to send. It is not charged.",
        "unreadable": "I could not read that. Send your video again, or /help.",
        "send_video_first": "Send me a video first.",
        "send_video_again": "The video you sent earlier is no longer kept. Please send it again.",
        "button_invalid": "This button is no longer valid.",
        "balance": "Available: {available} coins\nReserved for orders in progress: {reserved}",
        "balance_lot": "• {amount} coins, {expiry}",
        "expires": "expires {date}",
        "no_expiry": "no expiry",
        "history": "Your recent orders:",
        "history_empty": "No orders yet.",
        "history_line": "• {date}: {copies} copies, {state}, charged {charged}",
        "state_quoted": "not confirmed", "state_confirmed": "queued", "state_running": "in progress",
        "state_done": "done", "state_cancelling": "stopping", "state_cancelled": "cancelled",
        "state_failed": "failed",
        "not_found": "I could not find that order.",
        "unknown": "I did not understand. Send a video, or /help.",
    },
    "ru": {
        "welcome": "Привет{name}! Пришлите короткое видео, и я сделаю 1, 5 или 10 слегка разных копий "
                   "для Reels, Shorts и TikTok.\nНа вашем счёте {available} монет.{bonus}",
        "bonus": "\nВам подарок: {amount} монет.",
        "referral": "\nВы пришли по приглашению друга: первый заказ принесёт вам ещё {amount} монет.",
        "packages": "Купить монеты за Telegram Stars:",
        "package_button": "{coins} монет — {stars} ⭐",
        "buy_button": "Купить монеты",
        "invoice_title": "{coins} монет",
        "invoice_description": "{coins} монет для копий видео.",
        "coins_credited": "Оплата получена: начислено {coins} монет. Доступно {available} монет.",
        "payment_unmatched": "Мы получили вашу оплату ({stars} Stars), но не смогли сопоставить её с пакетом "
                             "монет. Поддержка разберётся; ничего не потеряно.",
        "offer_withdrawn": "Это предложение изменилось. Откройте /buy, чтобы увидеть актуальные пакеты.",
        "payments_unavailable": "Оплата сейчас недоступна; ничего не списано. Попробуйте чуть позже.",
        "refunded": "Покупка {coins} монет возвращена: {stars} Stars вернутся к вам.",
        "coins_granted": "Вам начислено {amount} монет{reason}.",
        "coins_expired": "Сгорело монет: {amount}.",
        "referral_rewarded": "Приглашённый вами друг сделал первый заказ: вам {amount} монет.",
        "referral_invitee_rewarded": "Первый заказ по приглашению друга: вам {amount} монет.",
        "payment_confirming": "Оплата {stars} Stars получена: монеты начислим, как только Telegram её подтвердит.",
        "payment_reversed": "Оплата {stars} Stars не подтверждена Telegram: её {coins} монет списаны.",
        "invite": "Приглашайте друзей кодом ref_{user_id}: когда друг, открывший бота по ссылке "
                  "t.me/<bot>?start=ref_{user_id}, сделает первый заказ, он получит {amount} монет, и вы тоже.",
        "help": "Пришлите видео (до {max_mb} МБ и {max_s} секунд), выберите число копий, подтвердите цену. "
                "Каждая копия приходит, как только готова; отменить можно в любой момент — "
                "оплачиваются только полученные копии.\n/balance — ваши монеты\n/history — ваши заказы\n"
                "/buy — купить монеты\n/invite — пригласить друзей",
        "choose_copies": "Сколько копий сделать?",
        "copies_button": "{n} × {price} монет",
        "quote": "{copies} копий по {per_copy} монет: всего {total} монет.\nЦена действует до {expires}.",
        "confirm_button": "Подтвердить — {total} монет",
        "confirmed": "Заказ принят: {copies} копий, зарезервировано {total} монет. "
                     "Оплачиваются только полученные копии.",
        "cancel_button": "Отменить",
        "copy_ready": "Копия {n} из {copies}",
        "order_done": "Все {copies} копий готовы: {total} монет, каждая копия списывается при получении.",
        "order_done_partly": "Готово {made} из {copies} копий: {total} монет, каждая копия списывается при "
                             "получении; за остальные — ничего.",
        "copy_failed": "Копию {n} из {copies} сделать не удалось: {why}, даже после {tries} попыток. Она не "
                       "отправлена и не оплачивается; возвращено {returned} монет.",
        "why_looks_different": "каждый вариант заметно отличался от вашего видео",
        "why_matches_source": "каждый вариант оставался слишком похож на ваше видео, платформы бы их не различили",
        "why_matches_other_copy": "каждый вариант почти совпадал с другой копией этого заказа",
        "order_cancelled": "Отменено. Списано {charged} монет за полученные копии; возвращено {released}.",
        "order_failed": "Не удалось сделать копии ({reason}). Списано {charged} монет за полученные копии"
                        "{pending}; возвращено {released}.",
        "pending": ", ещё {amount} — за копии в пути",
        "cancel_requested": "Останавливаю… Спишем только за уже отправленные копии.",
        "not_enough_coins": "Недостаточно монет: нужно {needed}, у вас {available}.",
        "quote_expired": "Срок цены истёк. Выберите число копий ещё раз.",
        "already_confirmed": "Этот заказ уже подтверждён.",
        "busy": "Сейчас все мощности заняты. Попробуйте через несколько минут; ничего не списано.",
        "too_many_orders": "За последний час уже {limit} заказов — больше нельзя. Попробуйте позже; "
                           "ничего не списано.",
        "video_too_big": "Видео слишком большое ({size_mb} МБ). Предел — {max_mb} МБ.",
        "video_too_long": "Видео слишком длинное ({seconds} с). Предел — {max_s} секунд.",
        "video_format": "Этот файл не похож на видео, с которым я умею работать. Пришлите MP4, MOV или WebM.",
        "video_unavailable": "Telegram не смог отдать мне этот файл. Пришлите его ещё раз.",
        "video_too_sharp": "В этом видео слишком много изображения в секунду (размер кадра × частота кадров). "
                           "Предел — {max_mpx} мегапикселей в секунду, например 1920×1080 при {fps_1080} к/с.",
        "video_unchecked": "Не удалось проверить длительность этого видео, поэтому я его не взял. Пришлите его "
                           "ещё раз как видео (до {max_s} секунд).",
        "copy_too_large": "Копия {n} из {copies} получилась слишком большой, Telegram её не принял. Она не "
                          "оплачивается.",
        "unreadable": "Не смог это прочитать. Пришлите видео ещё раз или /help.",
        "send_video_first": "Сначала пришлите видео.",
        "send_video_again": "Видео, которое вы присылали раньше, больше не хранится. Пришлите его ещё раз.",
        "button_invalid": "Эта кнопка больше не действует.",
        "balance": "Доступно: {available} монет\nВ резерве под заказы: {reserved}",
        "balance_lot": "• {amount} монет, {expiry}",
        "expires": "сгорят {date}",
        "no_expiry": "без срока",
        "history": "Ваши последние заказы:",
        "history_empty": "Заказов пока нет.",
        "history_line": "• {date}: {copies} копий, {state}, списано {charged}",
        "state_quoted": "не подтверждён", "state_confirmed": "в очереди", "state_running": "делается",
        "state_done": "готов", "state_cancelling": "останавливается", "state_cancelled": "отменён",
        "state_failed": "не удался",
        "not_found": "Не нашёл такой заказ.",
        "unknown": "Не понял. Пришлите видео или /help.",
    },
}


def text(language: str, name: str, /, **values: Any) -> str:
    return TEXTS.get(language, TEXTS["en"])[name].format(**values)


def _date(value: str | datetime | None) -> str:
    if value is None:
        return ""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def render(kind: str, payload: Mapping[str, Any], language: str) -> Screen:
    """One outbox row as the user sees it."""
    def t(name: str, /, **values: Any) -> str:
        return text(language, name, **values)

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
        why = t(f"why_{first}") if f"why_{first}" in TEXTS["en"] else first
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
        if state == "cancelled":
            return Screen(t("order_cancelled", charged=payload["charged"], released=payload["released"]))
        return Screen(t("order_failed", reason=payload.get("reason") or "?", charged=payload["charged"],
                        pending=t("pending", amount=pending) if pending else "", released=payload["released"]))
    screen = payload["screen"]
    if screen == "welcome":
        bonus = t("bonus", amount=payload["bonus"]) if payload.get("bonus") else ""
        if payload.get("referral"):
            bonus += t("referral", amount=payload["referral"])
        name = f", {payload['name']}" if payload.get("name") else ""
        return Screen(t("welcome", name=name, available=payload["available"], bonus=bonus))
    if screen == "packages":
        rows = tuple(
            (Button(t("package_button", coins=coins, stars=stars), f"b:{stars}"),)
            for stars, coins in payload["packages"]
        )
        return Screen(t("packages"), rows)
    if screen == "coins_granted":
        reason = f" ({payload['reason']})" if payload.get("reason") else ""
        return Screen(t("coins_granted", amount=payload["amount"], reason=reason))
    if screen == "choose_copies":
        row = tuple(Button(t("copies_button", n=n, price=price), f"n:{n}") for n, price in payload["prices"])
        return Screen(t("choose_copies"), (row,))
    if screen == "quote":
        confirm = Button(t("confirm_button", total=payload["total"]), payload["confirm_data"])
        return Screen(
            t("quote", copies=payload["copies"], per_copy=payload["per_copy"], total=payload["total"],
              expires=_date(payload["expires_at"])),
            ((confirm,),),
        )
    if screen == "confirmed":
        cancel = Button(t("cancel_button"), f"x:{payload['order_id']}")
        return Screen(t("confirmed", copies=payload["copies"], total=payload["total"]), ((cancel,),))
    if screen == "balance":
        lines = [t("balance", available=payload["available"], reserved=payload["reserved"])]
        for lot in payload["lots"]:
            expiry = t("expires", date=_date(lot["expires_at"])) if lot["expires_at"] else t("no_expiry")
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
        return Screen("\n".join(lines))
    values = {key: value for key, value in payload.items() if key not in ("screen", "expires_at")}
    return Screen(t(screen, **values))
