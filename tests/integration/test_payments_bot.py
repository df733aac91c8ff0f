"""Coins bought with Telegram Stars through the real roles: the Bot API simulator, edge (real
aiogram) and core as processes on a real PostgreSQL. A payment notified twice credits once, a
dropped one is found by reconciliation (core's schedule, or `videocopies payments reconcile`),
and one that arrives after reconciliation credited it changes nothing. Refunds, manual grants
and referrals go through the operator's API and the bot the same way."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from videocopies import cli
from videocopies.adapters.screens import text
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, edge_process, issue_token, stop_process
from videocopies.testing.telegram_simulator import BotApiSimulator

from .harness import fetch_all, fetch_one, stopped_if_left, wait_for

SECRET = "payments-secret" * 3


def _next(user: Any, timeout: float = 30, **match: Any) -> Any:
    return asyncio.run(user.next_message(timeout=timeout, **match))


def _buy(user: Any, stars: int) -> int:
    """/buy, press the package: the invoice message the bot sent."""
    user.send_text("/buy")
    packages = _next(user, contains="Telegram Stars")
    (data,) = [b["callback_data"] for row in packages.message["reply_markup"]["inline_keyboard"] for b in row
               if b["callback_data"] == f"b:{stars}"]
    user.press(packages.message["message_id"], data)
    invoice = _next(user, method="sendInvoice")
    assert invoice.message["invoice"]["currency"] == "XTR"
    assert invoice.message["invoice"]["total_amount"] == stars
    return int(invoice.message["message_id"])


def _pay(user: Any, invoice_id: int, delivery: str = "deliver") -> str:
    query = user.pay(invoice_id, successful_payment=delivery)
    outcome = asyncio.run(user.payment_outcome(query, timeout=15))
    assert outcome["outcome"] == "paid", outcome
    return str(outcome["telegram_payment_charge_id"])


def _payments(url: str) -> dict[str, tuple[int, int]]:
    rows = fetch_all(url, "SELECT external_id, coins, paid_amount FROM payments")
    return {eid: (coins, paid) for eid, coins, paid in rows}


def _purchased(url: str, user_id: int) -> int:
    row = fetch_one(url, "SELECT coalesce(sum(amount), 0) FROM coin_lots WHERE user_id = %s AND kind = 'purchase'",
                    [user_id])
    assert row is not None
    return int(row[0])


def _notify_late(sim: BotApiSimulator, bot_token: str, user: Any, charge_id: str, stars: int) -> None:
    """Telegram delivering a `successful_payment` again, after we credited the charge."""
    bot = sim.state.bot(bot_token)
    profile = bot.chats[user.id].user
    message = {
        "message_id": sim.state.next_message_id(bot, user.id), "from": profile.to_json(), "chat": profile.chat_json(),
        "date": int(time.time()),
        "successful_payment": {
            "currency": "XTR", "total_amount": stars, "invoice_payload": bot.charges[charge_id].payload,
            "telegram_payment_charge_id": charge_id, "provider_payment_charge_id": "",
        },
    }
    assert sim.state.push_update(bot, "message", message) is not None


def _handled_payment_events(url: str) -> int:
    row = fetch_one(url, "SELECT count(*) FROM inbox WHERE kind = 'payment' AND processed_at IS NOT NULL")
    assert row is not None
    return int(row[0])


def _stop(process: subprocess.Popen[bytes]) -> None:
    code, err = stop_process(process)
    assert code == 0, err.decode()[-3000:]


def _cli(url: str, bot_token: str, sim_url: str, *args: str, here: bool = False) -> subprocess.CompletedProcess[str]:
    """`videocopies payments ...` as a process; `here`: the same command line run in this process,
    which spares a process the seconds of importing aiogram again."""
    env = {"VIDEOCOPIES_DATABASE_URL": url, "VIDEOCOPIES_QUOTE_SECRET": SECRET,
           "VIDEOCOPIES_BOT_TOKEN": bot_token, "VIDEOCOPIES_TELEGRAM_URL": sim_url}
    argv = ["payments", *args]
    if not here:
        return subprocess.run([sys.executable, "-m", "videocopies.cli", *argv], env={**os.environ, **env},
                              capture_output=True, text=True, timeout=60)
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for name, value in env.items():
            patch.setenv(name, value)
        code = cli.main(argv)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def test_duplicate_dropped_and_late_notifications_credit_each_charge_once(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    with BotApiSimulator() as sim:
        bot_token = sim.create_bot()
        core_env = {"VIDEOCOPIES_BOT_TOKEN": bot_token, "VIDEOCOPIES_TELEGRAM_URL": sim.url,
                    "VIDEOCOPIES_RECONCILE_EVERY_S": "1"}
        core = CoreProcess(url, quote_secret=SECRET, **core_env)
        # Edge starts beside core: its imports take seconds, and it retries core until core answers.
        edge = edge_process(core.url, issue_token(url, "edge-pay", "edge"), bot_token, sim.url, tmp_path / "e")
        with stopped_if_left(edge), core:
            try:
                user = sim.create_user(bot_token, first_name="Ann", language_code="en")
                user.send_text("/start")
                _next(user, contains="50 coins")

                paid = _pay(user, _buy(user, 50))
                assert "100 coins added" in _next(user, contains="Payment received").text

                twice = _pay(user, _buy(user, 100), "duplicate")
                assert "220 coins added" in _next(user, contains="Payment received").text
                wait_for(lambda: _handled_payment_events(url) == 3, timeout=30)

                dropped = _pay(user, _buy(user, 250), "drop")  # Telegram never tells us
                assert "600 coins added" in _next(user, contains="Payment received").text  # reconciliation did

                _notify_late(sim, bot_token, user, dropped, 250)
                wait_for(lambda: _handled_payment_events(url) == 4, timeout=30)
                user.send_text("/balance")
                balance = _next(user, contains="Available")
            finally:
                _stop(edge)
        assert "Available: 970 coins" in balance.text  # 50 + 100 + 220 + 600, each charge once
        # One message per charge: neither the duplicate nor the late notification said anything.
        assert len([e for e in user.received if "Payment received" in e.text]) == 3
    assert _payments(url) == {paid: (100, 50), twice: (220, 100), dropped: (600, 250)}
    assert _purchased(url, user.id) == 920


def test_reconcile_and_refund_from_the_command_line_grants_and_referrals_by_the_bot(
    pg_server: LocalPostgres, database: str, tmp_path: Path
) -> None:
    url = pg_server.url(database)
    with BotApiSimulator() as sim:
        bot_token = sim.create_bot()
        core = CoreProcess(url, quote_secret=SECRET, VIDEOCOPIES_COIN_PACKAGES="50:100,100:220")
        edge_token = issue_token(url, "edge-pay", "edge")
        edge = edge_process(core.url, edge_token, bot_token, sim.url, tmp_path / "e")  # beside core, as above
        with stopped_if_left(edge), core:
            edge_node = {"Authorization": f"Bearer {edge_token}"}
            operator = {"Authorization": f"Bearer {issue_token(url, 'control-1', 'control')}"}
            try:
                ann = sim.create_user(bot_token, first_name="Ann", language_code="en")
                ann.send_text("/start")
                _next(ann, contains="50 coins")
                bob = sim.create_user(bot_token, first_name="Bob", language_code="ru")
                bob.send_text(f"/start ref_{ann.id}")
                assert "первый заказ принесёт вам ещё 30 монет" in _next(bob, contains="Привет").text

                dropped = _pay(ann, _buy(ann, 50), "drop")
                reconciled = _cli(url, bot_token, sim.url, "reconcile")
                assert reconciled.returncode == 0, reconciled.stderr
                assert f"credited: 1 {dropped}" in reconciled.stdout
                assert "100 coins added" in _next(ann, contains="Payment received").text

                # An invoice for an offer no longer on sale (the price list changed since): declined.
                stale = {"user": {"id": ann.id, "language_code": "en"}, "currency": "XTR", "total_amount": 100,
                         "invoice_payload": "buy:100:250"}
                verdict = httpx.post(f"{core.url}/v1/payments/pre-checkout", headers=edge_node, json=stale).json()
                assert verdict == {"ok": False, "error_message": "This offer has changed. Open /buy to see the "
                                                                 "current packages."}
                ann.send_text("/language")  # the refusal speaks the language chosen, not Telegram's
                ann.press(_next(ann, contains="Which language").message["message_id"], "l:ru")
                _next(ann, contains="по-русски")
                verdict = httpx.post(f"{core.url}/v1/payments/pre-checkout", headers=edge_node, json=stale).json()
                assert verdict == {"ok": False, "error_message": text("ru", "offer_withdrawn")}
                ann.send_text("/language")
                ann.press(_next(ann, contains="На каком языке").message["message_id"], "l:en")
                _next(ann, contains="I speak English")

                refunded = _cli(url, bot_token, sim.url, "refund", dropped, "--reason", "asked nicely", here=True)
                assert refunded.returncode == 0, refunded.stderr
                assert f"refund {dropped}: done, 100 coins" in refunded.stdout
                assert sim.state.bot(bot_token).charges[dropped].refunded
                assert "100 coins was refunded" in _next(ann, contains="refunded").text
                again = _cli(url, bot_token, sim.url, "refund", dropped, here=True)
                assert again.returncode == 2 and "AlreadyRefunded" in again.stderr
                twice = httpx.post(f"{core.url}/v1/control/payments/{dropped}/refund", headers=operator,
                                   json={"reason": "again"})
                assert twice.status_code == 409 and twice.json()["error"] == "AlreadyRefunded"
                # This core was given no bot token: it says so instead of pretending.
                unreachable = httpx.post(f"{core.url}/v1/control/payments/reconcile", headers=operator)
                assert unreachable.status_code == 409 and "VIDEOCOPIES_BOT_TOKEN" in unreachable.json()["detail"]

                granted = httpx.post(f"{core.url}/v1/control/grants", headers=operator, json={
                    "user_id": ann.id, "amount": 25, "reason": "sorry for the wait", "grant_id": "apology-1"})
                assert granted.status_code == 200, granted.text
                assert "25 coins (to make up for a problem on our side)" in _next(ann, contains="You were given").text
                worker = {"Authorization": f"Bearer {issue_token(url, 'worker-1', 'worker')}"}
                refused = httpx.post(f"{core.url}/v1/control/grants", headers=worker, json={
                    "user_id": ann.id, "amount": 25, "reason": "me", "grant_id": "x"})
                assert refused.status_code == 403
            finally:
                _stop(edge)
    assert fetch_all(url, "SELECT granted_by, reason, amount FROM coin_grants WHERE kind = 'manual'") == [
        ("control-1", "sorry for the wait", 25)
    ]
    assert fetch_all(url, "SELECT state, requested_by LIKE 'cli:%%' FROM refunds") == [("done", True)]
    # Bob never ordered: the referral waits, and Ann was given nothing (nor told anything) for it.
    assert fetch_all(url, "SELECT invitee, inviter, outcome FROM referrals") == [(bob.id, ann.id, None)]
    assert not [m for m in ann.received if "friend" in m.text]
    # 50 start + 25 manual; the refunded purchase is gone
    row = fetch_one(url, "SELECT sum(available), sum(refunded) FROM coin_lots WHERE user_id = %s", [ann.id])
    assert row == (75, 100)
