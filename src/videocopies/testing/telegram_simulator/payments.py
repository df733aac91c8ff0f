"""Telegram Stars payments: invoices, pre-checkout queries, successful payments, refunds, transactions."""

from __future__ import annotations

import secrets

from videocopies.testing.telegram_simulator import errors
from videocopies.testing.telegram_simulator.accounts import BotAccount, Charge, Invoice, PreCheckout
from videocopies.testing.telegram_simulator.chats import new_message, reply_markup, target_chat
from videocopies.testing.telegram_simulator.errors import BotApiError, bad_request
from videocopies.testing.telegram_simulator.params import Params
from videocopies.testing.telegram_simulator.state import SimulatorState


def send_invoice(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    chat = target_chat(state, bot, p)
    title, description, payload = p.str("title", ""), p.str("description", ""), p.str("payload", "")
    if not 1 <= len(title) <= 32:
        raise bad_request("INVOICE_TITLE_INVALID" if title else "title is empty")
    if not 1 <= len(description) <= 255:
        raise bad_request("description is empty" if not description else "INVOICE_DESCRIPTION_INVALID")
    if not 1 <= len(payload.encode()) <= 128:
        raise bad_request("INVOICE_PAYLOAD_INVALID" if payload else "payload is empty")
    currency = p.str("currency", "")
    if currency != "XTR":
        raise bad_request("the simulator only takes Telegram Stars: currency must be XTR")
    if p.str("provider_token"):
        raise bad_request("PROVIDER_TOKEN_INVALID")
    prices = p.json("prices")
    if not isinstance(prices, list) or len(prices) != 1:
        raise bad_request("STARS_INVOICE_INVALID")
    try:
        amount = int(prices[0]["amount"])
        str(prices[0]["label"])
    except (KeyError, TypeError, ValueError):
        raise bad_request("can't parse prices JSON object") from None
    if amount <= 0:
        raise bad_request("CURRENCY_TOTAL_AMOUNT_INVALID")
    markup = reply_markup(p)
    state.admit_send(bot, chat)
    invoice_json = {
        "title": title, "description": description, "start_parameter": p.str("start_parameter", ""),
        "currency": currency, "total_amount": amount,
    }
    message = new_message(state, bot, chat, invoice=invoice_json)
    if markup:
        message["reply_markup"] = markup
    bot.invoices[(chat.user.id, message["message_id"])] = Invoice(
        chat.user.id, message["message_id"], title, payload, currency, amount,
    )
    state.record(bot, chat, "sendInvoice", message)
    return message


def answer_pre_checkout_query(state: SimulatorState, bot: BotAccount, p: Params) -> bool:
    query = bot.pre_checkouts.get(p.str("pre_checkout_query_id") or "")
    ok = p.bool("ok")
    if query is None or query.outcome != "pending" or expired(state, query):
        raise BotApiError(400, errors.QUERY_TOO_OLD)
    if not ok and not p.str("error_message"):
        raise bad_request("error_message is empty")
    if not ok:
        query.outcome, query.error_message = "declined", p.str("error_message")
        bot.chats[query.user_id].changed.notify()
        return True
    charge = Charge(_charge_id(), query.user_id, query.invoice.total_amount, query.invoice.payload)
    bot.charges[charge.id] = charge
    query.outcome, query.charge_id = "paid", charge.id
    _record(state, bot, charge, "source")
    user = bot.chats[query.user_id].user
    if query.delivery != "drop":
        chat = bot.chats[query.user_id]
        message = {
            "message_id": state.next_message_id(bot, user.id), "from": user.to_json(), "chat": user.chat_json(),
            "date": int(state.clock()),
            "successful_payment": {
                "currency": query.invoice.currency, "total_amount": charge.amount,
                "invoice_payload": charge.payload, "telegram_payment_charge_id": charge.id,
                "provider_payment_charge_id": "",
            },
        }
        chat.messages[message["message_id"]] = message
        for _ in range(2 if query.delivery == "duplicate" else 1):
            state.push_update(bot, "message", message)
    bot.chats[query.user_id].changed.notify()
    return True


def refund_star_payment(state: SimulatorState, bot: BotAccount, p: Params) -> bool:
    if not p.has("user_id"):
        raise bad_request("user_id is empty")
    charge = bot.charges.get(p.str("telegram_payment_charge_id") or "")
    if charge is None:
        raise bad_request("CHARGE_ID_INVALID")
    if charge.user_id != p.int("user_id"):
        raise bad_request("USER_ID_INVALID")
    if charge.refunded:
        raise bad_request("CHARGE_ALREADY_REFUNDED")
    charge.refunded = True
    _record(state, bot, charge, "receiver")
    return True


def _record(state: SimulatorState, bot: BotAccount, charge: Charge, side: str) -> None:
    """A Star transaction in the bot's list: the user is its `source` when they paid, its
    `receiver` when they were refunded."""
    user = bot.chats[charge.user_id].user
    bot.transactions.append({
        "id": charge.id, "amount": charge.amount, "date": int(state.clock()),
        side: {"type": "user", "transaction_type": "invoice_payment", "user": user.to_json(),
               "invoice_payload": charge.payload},
    })


def get_star_transactions(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    offset = max(p.int("offset", 0), 0)
    limit = p.int("limit", 100)
    if not 1 <= limit <= 100:
        raise bad_request("limit must be between 1 and 100")
    return {"transactions": bot.transactions[offset:offset + limit]}


def expired(state: SimulatorState, query: PreCheckout) -> bool:
    if query.outcome == "pending" and state.clock() - query.created_at > state.settings.pre_checkout_deadline:
        query.outcome = "expired"
    return query.outcome == "expired"


def _charge_id() -> str:
    return "stxsim" + secrets.token_urlsafe(36)
