"""Core's health pages need no token, and show no money: payment totals and coins bought
appear in /metrics and /_info only for a control node's token (the "read" scope)."""

from __future__ import annotations

import asyncio

import httpx

from videocopies.application import use_cases as uc
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.runtime.launch import CoreProcess, issue_token
from videocopies.settings import Settings


async def _a_payment(url: str) -> None:
    service = PostgresService(settings=Settings(quote_secret=b"money-figures-a-quote-secret-of-32-bytes!"))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 1})
    pool = service.gateways.pool()
    await pool.open(wait=True)
    try:
        await service.use_cases.credit_payment()(uc.CreditPaymentCommand("charge-1", UserId(7), 100, 50, "XTR"))
    finally:
        await pool.close()


def _pages(base_url: str, token: str | None) -> tuple[str, dict[str, object]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=base_url, headers=headers, timeout=10) as http:
        metrics, info = http.get("/metrics"), http.get("/_info")
    assert metrics.status_code == 200 and info.status_code == 200
    return metrics.text, info.json()


def _sample(text: str, name: str) -> float | None:
    return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " ")), None)


def test_money_figures_only_for_a_control_token(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    asyncio.run(_a_payment(url))
    tokens = {role: issue_token(url, f"{role}-1", role) for role in ("worker", "edge", "control")}
    with CoreProcess(url) as core:
        public = {who: _pages(core.url, token) for who, token in [
            ("anyone", None), ("worker", tokens["worker"]), ("edge", tokens["edge"]), ("forged", "0123abcd.secret"),
        ]}
        operator_metrics, operator_info = _pages(core.url, tokens["control"])

    for who, (metrics, info) in public.items():
        assert "payment" not in metrics and "coins" not in metrics, who
        assert "money" not in info and "payment" not in str(info), who
        assert _sample(metrics, 'videocopies_queue_jobs{state="queued"}') == 0, who  # health is still there
    assert _sample(operator_metrics, "videocopies_payments_credited") == 1
    assert _sample(operator_metrics, "videocopies_payment_coins") == 100
    assert operator_info["money"] == {"payments_credited": 1, "payment_coins": 100}
