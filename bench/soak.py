"""Chaos soak: simulated users order copies while workers, core, PgBouncer, PostgreSQL and
the object store fail under them, then the books are checked.

Every role is a process of its own on the local stack: PostgreSQL behind PgBouncer
(transaction mode; LISTEN direct), SeaweedFS (S3), the Bot API simulator, core, edge and
workers. Users order 1, 5 or 10 copies of a 1 s clip through the use cases, some cancel
midway; every quote screen and copy reaches the user through edge, so a copy is charged only
when edge reports it delivered, and a sent quote's Confirm is kept to be taken off at expiry.
A few other users buy coins through the bot (Telegram's payment flow).
Meanwhile, at seeded random points: SIGKILL of a worker (restarted), SIGSTOP of a worker
past its lease then SIGCONT, restarts of core, PgBouncer and PostgreSQL, SIGKILL of
PostgreSQL's whole process tree (then crash recovery), core's connections terminated, a
worker's disk filled, the object store down. PostgreSQL is durable (fsync, synchronous_commit,
full_page_writes on): every confirmation, payment and delivery report acknowledged before a
SIGKILL must be found after it.

Then the drain: retention 0 for every table and object; each transient table's rows and the
store's objects must be back where they were before the first order.

Prints one JSON line: the figures that must be 0, and how many of each fault was injected.

    uv run python bench/soak.py [--orders 200] [--users 25] [--workers 3] [--seed 9] [--payments 8]
        [--pg-setting synchronous_commit=off]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import shutil
import signal
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import attrs
import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).parent))
import soak_drain as drain  # noqa: E402
from _support import emit  # noqa: E402
from soak_books import acknowledged, books, files_left, growth, objects  # noqa: E402
from soak_faults import Chaos  # noqa: E402
from soak_stack import (  # noqa: E402
    BOT_TOKEN,
    FAULTS,
    FINAL,
    SECRET,
    TIDY_S,
    SoakPlan,
    Stack,
    fetch,
    stack,
    stop_roles,
)

from videocopies.adapters.ffmpeg.clips import make_clip  # noqa: E402
from videocopies.application import use_cases as uc  # noqa: E402
from videocopies.application.bot.orders import quote_screen as bot_quote_screen  # noqa: E402
from videocopies.application.errors import NotFound  # noqa: E402
from videocopies.application.ports import OutboxMessage  # noqa: E402
from videocopies.domain.coins import LotKind  # noqa: E402
from videocopies.domain.pricing import Quote, QuoteKeys  # noqa: E402
from videocopies.domain.shared import OrderId, UserId  # noqa: E402
from videocopies.roles.containers import PostgresService  # noqa: E402
from videocopies.settings import Settings  # noqa: E402

# -- the users ---------------------------------------------------------------------------------


@attrs.frozen
class Wish:
    user: int
    copies: int
    cancel_after_s: float | None


def wishes(plan: SoakPlan, rng: random.Random) -> list[Wish]:
    out = []
    for _ in range(plan.orders):
        copies = rng.choices((1, 5, 10), weights=(6, 3, 1))[0]
        cancel = rng.uniform(0.5, 8.0) if rng.random() < 0.15 else None
        out.append(Wish(rng.randrange(plan.users) + 1, copies, cancel))
    return out


async def persist(what: str, call: Any, give_up_s: float = 180.0) -> Any:
    """A user trying again while the service is down (the database or the store restarting);
    a refusal in the domain's words is an answer, not an outage."""
    deadline = time.monotonic() + give_up_s
    while True:
        try:
            return await call()
        except Exception as error:
            if type(error).__module__.startswith(("videocopies.domain", "videocopies.application")):
                raise
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: gave up") from error
            await asyncio.sleep(0.5)


def quote_screen(keys: QuoteKeys, quote: Quote) -> OutboxMessage:
    """The quote as the bot announces it (its own screen fields), its Confirm button genuine: edge
    sends it, and core keeps its Telegram message in lapsing_buttons until the quote expires.
    Keyed by the quote, as no update of the user's asked for it."""
    payload = {"screen": "quote", **bot_quote_screen(keys, quote)}
    return OutboxMessage(quote.user_id, "screen", payload, f"soak-quote:{quote.quote_id}")


class Users:
    """Simulated users placing their orders through the use cases, as the bot would."""

    def __init__(self, stack: Stack, plan: SoakPlan, clip: Path) -> None:
        self._stack, self._plan, self._clip = stack, plan, clip
        settings = Settings(quote_secret=SECRET.encode())
        self.service = PostgresService(settings=settings)
        self._keys = settings.quote_keys
        self.service.gateways.config.from_dict({"database_url": stack.url, "pool_size": 4})
        self.quoted: list[str] = []
        self.confirmed: list[str] = []
        self.cancel_requests = 0
        self.bought_at = 0.0
        self.purchases: list[str] = []
        self._uploaded: set[int] = set()

    @property
    def buyers(self) -> list[int]:
        return [self._plan.users + 1 + n for n in range(self._plan.payments)]

    async def open(self) -> None:
        pool = self.service.gateways.pool()
        await pool.open(wait=True)
        async with httpx.AsyncClient(base_url=self._stack.sim_url) as sim:
            ids = [*range(1, self._plan.users + 1), *self.buyers]
            users = [{"id": u, "first_name": f"U{u}", "language_code": "en"} for u in ids]
            (await sim.post("/_sim/users/bulk", json={"bot_token": BOT_TOKEN, "users": users})).raise_for_status()
            # A bot may write only to users who started it.
            actions = [{"user_id": u["id"], "text": "/start"} for u in users]
            (await sim.post("/_sim/burst", json={"actions": actions})).raise_for_status()
        grant = self.service.use_cases.grant_coins()
        for user in range(1, self._plan.users + 1):
            await grant(uc.GrantCoinsCommand(UserId(user), LotKind.MANUAL, 100_000, None, f"soak-{user}"))

    async def close(self) -> None:
        await self.service.gateways.pool().close()

    async def order(self, wish: Wish) -> str:
        cases = self.service.use_cases
        key, size = f"sources/{wish.user}/soak.mp4", self._clip.stat().st_size
        if wish.user not in self._uploaded:  # as the bot stores a video when it is sent
            self._uploaded.add(wish.user)
            # Its row first, as edge's inbox event writes it: a key in the store with no row is
            # a stray, which core's object lifecycle deletes.
            await persist("source row", lambda: asyncio.to_thread(
                fetch, self._stack.url, "INSERT INTO stored_objects (key, kind, user_id, size, state, stored_at) "
                "VALUES (%s, 'source', %s, %s, 'stored', now()) ON CONFLICT (key) DO NOTHING", key, wish.user, size))
            await persist("upload", lambda: self._stack.store.put_file(key, self._clip))
        # The quote screen is sent, so its Confirm lapses at its expiry; the confirmation below is
        # the use case's, not a press, so nothing takes the button off sooner: the drain lapses it.
        quote = await persist("quote", lambda: cases.quote_order()(uc.QuoteOrderCommand(
            UserId(wish.user), key, wish.copies, size, announce=lambda q: quote_screen(self._keys, q))))

        self.quoted.append(quote.quote_id)

        async def confirm() -> bool:
            try:
                await cases.confirm_order()(uc.ConfirmOrderCommand(UserId(wish.user), quote.quote_id, quote.token))
            except NotFound:
                return False  # the quote the user was given is gone: counted in acknowledged_lost
            except Exception as error:
                # A retry after a confirmation whose answer was lost: it did happen.
                if type(error).__name__ not in ("QuoteAlreadyUsed", "OrderNotInState"):
                    raise
            return True

        if not await persist("confirm", confirm):
            return quote.quote_id
        self.confirmed.append(quote.quote_id)
        if wish.cancel_after_s is not None:
            await asyncio.sleep(wish.cancel_after_s)
            self.cancel_requests += 1
            with contextlib.suppress(NotFound):  # the confirmed order is gone: counted as above
                await persist("cancel", lambda: cases.cancel_order()(
                    uc.CancelOrderCommand(UserId(wish.user), OrderId(quote.quote_id))))
        return quote.quote_id


async def buy(sim: httpx.AsyncClient, user: int, stars: int = 50) -> tuple[str | None, str]:
    """/buy, press the package, pay the invoice: the charge id once Telegram took the money
    (the bot accepted the pre-checkout query), else None; and what happened."""
    at = f"/_sim/users/{user}"

    async def next_message(**match: str) -> dict[str, Any] | None:
        answer = await sim.get(f"{at}/received/next", params={"timeout": 30, **match}, timeout=40)
        return answer.json()["message"] if answer.status_code == 200 else None

    seen = await sim.get(f"{at}/received")
    after = max((e["seq"] for e in seen.json()), default=0)
    (await sim.post(f"{at}/messages", json={"text": "/buy"})).raise_for_status()
    packages = await next_message(contains="Telegram Stars", after=str(after))
    if packages is None:
        return None, "no packages"
    press = {"message_id": packages["message_id"], "data": f"b:{stars}"}
    (await sim.post(f"{at}/presses", json=press)).raise_for_status()
    invoice = await next_message(method="sendInvoice")
    if invoice is None:
        return None, "no invoice"
    paid = await sim.post(f"{at}/payments", json={"message_id": invoice["message_id"]})
    query = paid.raise_for_status().json()["pre_checkout_query_id"]
    outcome = (await sim.get(f"{at}/payments/{query}", params={"wait": 30}, timeout=40)).json()
    return (str(outcome["telegram_payment_charge_id"]) if outcome["outcome"] == "paid" else None), outcome["outcome"]


async def buy_all(users: Users, sim_url: str) -> list[str]:
    """Each buyer buys one package, trying again (a new /buy) while the bot does not answer."""

    async def one(user: int, delay_s: float) -> str | None:
        # After the welcome, as a user would (a /buy before /start is handled is not answered),
        # and spread over the run, so that some payment is on its way when the server dies.
        await sim.get(f"/_sim/users/{user}/received/next", params={"timeout": 60}, timeout=70)
        await asyncio.sleep(delay_s)
        for _ in range(5):
            began = time.monotonic()
            charge, what = await buy(sim, user)
            users.purchases.append(f"{user}: {what} in {time.monotonic() - began:.1f} s")
            if charge:
                return charge
        return None

    # The buyers wait seconds between calls: a connection kept that long would be reused just as the
    # simulator closes it (uvicorn keeps an idle one 5 s), and the request would read a reset.
    async with httpx.AsyncClient(base_url=sim_url, timeout=30, limits=httpx.Limits(keepalive_expiry=1.0)) as sim:
        charges = await asyncio.gather(*(one(user, 6.0 * n) for n, user in enumerate(users.buyers)))
    users.bought_at = time.monotonic()
    return [c for c in charges if c]


def open_orders(url: str, ids: list[str]) -> int:
    if not ids:
        return 0
    with contextlib.suppress(psycopg.Error), psycopg.connect(url, connect_timeout=3) as conn:
        (n,), = conn.execute("SELECT count(*) FROM orders WHERE order_id = ANY(%s) AND state <> ALL(%s)",
                             (ids, list(FINAL))).fetchall()
        return int(n)
    return len(ids)


async def place_all(users: Users, plan: SoakPlan, url: str, all_wishes: list[Wish]) -> None:
    tasks: list[asyncio.Task[str]] = []
    for wish in all_wishes:
        while sum(not t.done() for t in tasks) + await asyncio.to_thread(open_orders, url, users.confirmed) \
                >= plan.in_flight:
            await asyncio.sleep(0.3)
        tasks.append(asyncio.create_task(users.order(wish)))
        await asyncio.sleep(0.05)
    await asyncio.gather(*tasks)


# -- the run -----------------------------------------------------------------------------------


def settle(stack: Stack, users: Users, timeout_s: float) -> None:
    """Until every order is final, every message is sent and every update handled (or the time is up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(psycopg.Error):
            (unsent, unhandled), = fetch(stack.url, "SELECT (SELECT count(*) FROM outbox WHERE sent_at IS NULL), "
                                         "(SELECT count(*) FROM inbox WHERE processed_at IS NULL)")
            if open_orders(stack.url, users.confirmed) == 0 and unsent == 0 and unhandled == 0:
                return
        time.sleep(1)


def soak(plan: SoakPlan, scratch: Path) -> dict[str, Any]:
    rng = random.Random(plan.seed)
    notes: list[str] = []
    clip = make_clip(scratch / "clip.mp4", seconds=1, width=360, height=640)
    started = time.monotonic()
    with stack(plan, scratch, notes) as built:
        users = Users(built, plan, clip)

        start = drain.before(built)  # the transient rows and objects before any user came
        phases = {"stack": time.monotonic() - started}

        async def drive(chaos: Chaos) -> None:
            await users.open()
            try:
                _, bought = await asyncio.gather(place_all(users, plan, built.url, wishes(plan, rng)),
                                                 buy_all(users, built.sim_url))
                paid.extend(bought)
            finally:
                await users.close()

        paid: list[str] = []

        with Chaos(built, plan, random.Random(plan.seed + 1), notes) as chaos:
            asyncio.run(drive(chaos))
            phases["orders"] = time.monotonic() - started
            phases["payments"] = users.bought_at - started
            deadline = time.monotonic() + plan.settle_timeout_s
            while time.monotonic() < deadline and (
                chaos.rounds < plan.min_rounds or open_orders(built.url, users.confirmed)
            ):
                time.sleep(1)
        phases["faults"] = time.monotonic() - started
        settle(built, users, plan.settle_timeout_s)
        # Core's passes over the closed jobs' stray copies: at least one, at most three.
        time.sleep(TIDY_S)
        deadline = time.monotonic() + 2 * TIDY_S
        while objects(built)["orphan_objects"] and time.monotonic() < deadline:
            time.sleep(1)
        figures = books(built, users.confirmed, chaos.zombies)
        figures.update(objects(built))
        figures.update(acknowledged(built, users.quoted, users.confirmed, paid))
        figures["outbox_messages"] = dict(fetch(  # what the load made the edge send, by kind
            built.url, "SELECT CASE kind WHEN 'screen' THEN 'screen:' || (payload->>'screen') ELSE kind END, "
            "count(*) FROM outbox GROUP BY 1 ORDER BY 1"))
        load_end = growth(built, drain.OBJECTS_TABLE)  # what the drain has to bring back to the start
        stop_roles(built)
        figures["temp_files_left"] = files_left(built)
        (figures["copies_delivered"],), = fetch(built.url, "SELECT count(*) FROM coin_debits")
        figures["copy_messages"] = fetch(built.url, "SELECT count(*), count(sent_at), count(delivery), "
                                          "min(delivery::text) FROM outbox WHERE kind = 'copy_ready'")[0]
        figures["cancel_requests"] = users.cancel_requests
        figures["purchases"] = users.purchases
        figures["faults"] = dict(chaos.injected)
        figures["faults_s"] = dict(chaos.took)
        figures["fault_errors"] = chaos.errors
        figures["notes"] = notes
        figures["durable"], figures["pg_settings"] = plan.durable, dict(plan.pg_settings)
        phases["books"] = time.monotonic() - started
        figures.update(drain.after(built, start))
        figures["growth"]["load_end"] = load_end
        phases["drain"] = time.monotonic() - started
        figures["phases_s"] = {name: round(at, 1) for name, at in phases.items()}  # when each ended
        figures["seconds"] = round(time.monotonic() - started, 1)
        figures["log_tail"] = {r.name: list(r.tail)[-3:] for r in [*built.workers.values(), built.edge] if r}
    return figures


MUST_BE_ZERO = ("lost", "double_charged", "charged_undelivered", "zombie_writes_accepted",
                "ledger_invariant_violations", "temp_files_left", "orphan_objects", "dangling_rows",
                "acknowledged_lost", "growth_left")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--users", type=int, default=25)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--payments", type=int, default=8)
    parser.add_argument("--settle-timeout", type=float, default=600.0,
                        help="seconds to wait for every order to end (and the faults meanwhile)")
    parser.add_argument("--pg-setting", action="append", default=[], metavar="NAME=VALUE",
                        help="a PostgreSQL setting over the durable ones (synchronous_commit=off shows the loss)")
    parser.add_argument("--fault-every", type=float, default=6.0)
    parser.add_argument("--faults", default=",".join(FAULTS), help="the kinds of fault to inject")
    parser.add_argument("--verbose", action="store_true", help="also print the roles' last log lines")
    args = parser.parse_args()
    plan = SoakPlan(orders=args.orders, users=args.users, workers=args.workers, seed=args.seed,
                    fault_every_s=args.fault_every, faults=tuple(args.faults.split(",")), payments=args.payments,
                    settle_timeout_s=args.settle_timeout,
                    pg_settings=tuple(tuple(s.split("=", 1)) for s in args.pg_setting))  # type: ignore[misc]
    # A stop asked for by the operator still stops every server this run started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scratch = Path(tempfile.mkdtemp(prefix="videocopies-soak-"))
    try:
        figures = soak(plan, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    tail = figures.pop("log_tail")
    emit({k: int(v) if isinstance(v, Decimal) else v for k, v in figures.items()})
    if args.verbose:
        print(tail, file=sys.stderr)
    sys.exit(1 if any(figures[k] for k in MUST_BE_ZERO) else 0)


if __name__ == "__main__":
    main()
