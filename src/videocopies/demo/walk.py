"""The demo: the seed's order on the in-memory adapters, real copies, then the bot through the simulator."""

from __future__ import annotations

import asyncio
import secrets
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import CopyArtifact, LeaseLost
from videocopies.domain.shared import UserId, WorkerId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

USER = UserId(1001)


class Demo:
    def __init__(self, out=sys.stdout) -> None:
        self.service = InMemoryService(settings=Settings(quote_secret=secrets.token_bytes(32)))
        self.cases = self.service.use_cases
        self.store = self.service.gateways.store()
        self.clock = self.service.gateways.clock()
        self.out = out
        self.step_no = 0

    def step(self, text: str) -> None:
        self.step_no += 1
        print(f"\n{self.step_no:>2}. {text}", file=self.out)

    def say(self, text: str) -> None:
        print(f"    {text}", file=self.out)

    def balance(self) -> tuple[int, int, int, int]:
        b = self.store.accounts[USER].balance(self.clock.now())
        self.say(
            f"balance: available {b.available}, reserved {b.reserved}, debited {b.debited}, "
            f"expired {b.expired}  (granted {b.granted}, balanced: {b.balanced})"
        )
        return b.available, b.reserved, b.debited, b.expired

    async def deliver_outbox(self) -> None:
        """What edge will do: send each ready copy, then report the delivery."""
        async with self.service.gateways.uow() as uow:
            pending = await uow.outbox.pending(100)
        for message_id, message in pending:
            if message.kind == "copy_ready":
                p = message.payload
                charged = await self.cases.record_delivery()(
                    uc.RecordDeliveryCommand(p["order_id"], p["index"])
                )
                self.say(f"sent copy {p['index'] + 1}/{p['copies']} to the user, charged {charged}")
            elif message.kind == "order_closed":
                p = message.payload
                self.say(f"told the user: order {p['state']}, charged {p['charged']}, returned {p['released']}")
            async with self.service.gateways.uow() as uow:
                await uow.outbox.mark_sent(message_id)

    async def run(self) -> int:
        cases = self.cases
        print("videocopies demo: 50 coins, a copy costs 4, an order of 5, two delivered, then cancel", file=self.out)

        self.step("The user says hello and receives the start bonus: 50 coins for 30 days")
        await cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 50, timedelta(days=30)))
        self.balance()

        self.step("The user sends a video and asks for 5 copies")
        quote = await cases.quote_order()(uc.QuoteOrderCommand(USER, "sources/demo/clip.mp4", 5))
        self.say(
            f"quote {quote.quote_id}: {quote.copies} copies x {quote.price_per_copy} = {quote.total} coins, "
            f"tariff v{quote.tariff_version}, valid until {quote.expires_at:%H:%M}, token {quote.token}"
        )

        self.step("The user presses 'confirm': coins reserved, job queued, effects fixed per copy")
        order_id = await cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
        self.balance()

        self.step("Worker A claims the job")
        (a,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("worker-a")))
        self.say(f"lease until {a.lease_until:%H:%M:%S}, attempt {a.attempt}, {len(a.remaining)} copies to render")
        for index, plan in a.remaining[:2]:
            artifact = CopyArtifact(f"copies/{order_id}/{index}.mp4", 1_000_000 + index, f"{index:064x}")
            await cases.checkpoint_copy()(uc.CheckpointCopyCommand(a.job_id, a.token, index, artifact))
            self.say(f"copy {index + 1} rendered (speed x{plan.speed}, crop {plan.crop:.1%}) and checkpointed")
            await self.deliver_outbox()
        self.balance()

        self.step("Worker A hangs; its lease runs out and worker B takes the job over")
        self.clock.advance(timedelta(seconds=31))
        (b,) = await cases.claim_job()(uc.ClaimJobCommand(WorkerId("worker-b")))
        self.say(
            f"attempt {b.attempt}: B renders only copies {[i + 1 for i, _ in b.remaining]}, "
            "with the same effects A had"
        )
        try:
            artifact = CopyArtifact(f"copies/{order_id}/2.mp4", 1, "0" * 64)
            await cases.checkpoint_copy()(uc.CheckpointCopyCommand(a.job_id, a.token, 2, artifact))
        except LeaseLost as refused:
            self.say(f"worker A wakes up and tries to write: refused ({refused.reason.value})")

        self.step("The user cancels")
        state = await cases.cancel_order()(uc.CancelOrderCommand(USER, order_id))
        self.say(f"order is {state.value}: the worker is asked to stop")
        renewed = await cases.renew_lease()(uc.RenewLeaseCommand(b.job_id, b.token))
        self.say(f"worker B renews its lease and learns cancel_requested={renewed.cancel_requested}")
        await cases.acknowledge_cancel()(b.job_id, b.token)
        self.say("worker B stopped FFmpeg and its file operations, and acknowledged")
        await self.deliver_outbox()
        available, reserved, debited, _ = self.balance()

        self.step("The user buys 100 coins for 50 Stars; Telegram notifies twice")
        buy = uc.CreditPaymentCommand("charge-1", USER, 100, 50, "XTR")
        first, second = await cases.credit_payment()(buy), await cases.credit_payment()(buy)
        self.say(f"first notification credited: {first}; duplicate credited: {second}")
        self.balance()

        refused = len(self.store.refusals)
        ok = (available, reserved, debited) == (42, 0, 8) and refused == 1
        seed = "as in the seed: 8 debited, 12 returned, 42 available, 0 reserved"
        self.step("Result: " + (seed if ok else "MISMATCH"))
        return 0 if ok else 1


def real_copies(out: Path) -> int:
    from videocopies.adapters.ffmpeg.clips import make_clip
    from videocopies.roles.copies_make import make_copies

    print("\nNow for real: PostgreSQL, the queue, a worker, FFmpeg, full-decode checks, storage.")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        clip = make_clip(Path(scratch) / "demo.mp4", seconds=3, width=720, height=1280)
        print(f"generated a 3 s 720x1280 clip ({clip.stat().st_size} bytes); making 5 copies into {out}/")
        return make_copies(clip, 5, out)


def bot_story() -> int:
    from videocopies.demo.bot_story import run_bot_story

    print("\nNow through Telegram, as `videocopies all-in-one` runs it: PostgreSQL, core, edge and two workers,"
          " each its own process, and a user on the Bot API simulator.")
    return run_bot_story(received=Path("var/demo-bot-copies"))


def main(out: Path = Path("var/demo-copies")) -> int:
    """The seed walk on the in-memory adapters, five real copies of a generated clip, then the bot story."""
    if (status := asyncio.run(Demo().run())) != 0:
        return status
    if (status := real_copies(out)) != 0:
        return status
    return bot_story()
