"""`python -m videocopies.testing.telegram_simulator`: a standalone simulator for the demo."""

from __future__ import annotations

import argparse
from pathlib import Path

from videocopies.runtime import heap
from videocopies.testing.telegram_simulator.server import BotApiSimulator
from videocopies.testing.telegram_simulator.settings import LAX


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Telegram Bot API simulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--mode", choices=("cloud", "local"), default="cloud")
    parser.add_argument("--token", action="append", default=[], help="a bot token to accept (repeatable)")
    parser.add_argument("--files-dir", type=Path, help="where uploaded files are kept (default: a temp dir)")
    parser.add_argument("--chat-rate", type=_rate, default=1.0,
                        help="sends per second per chat after the burst, or 'off' (default 1)")
    parser.add_argument("--chat-burst", type=int, default=3, help="sends at once to one chat (default 3)")
    parser.add_argument("--global-rate", type=_rate, default=30.0,
                        help="sends per second per bot after the burst, or 'off' (default 30)")
    parser.add_argument("--global-burst", type=int, default=30, help="sends at once per bot (default 30)")
    parser.add_argument("--fault-rate", type=float, default=0.01, help="share of calls answered 502 (default 0.01)")
    parser.add_argument("--slow-rate", type=float, default=0.01, help="share of calls answered late (default 0.01)")
    parser.add_argument("--slow-s", type=float, default=0.4, help="how late a slow answer is (default 0.4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault draws")
    parser.add_argument("--lax", action="store_true", help="no flood control and no faults (say why you need it)")
    parser.add_argument("--callback-deadline", type=float, default=15.0)
    args = parser.parse_args(argv)
    settings = {
        "chat_rate": args.chat_rate, "chat_burst": args.chat_burst, "global_rate": args.global_rate,
        "global_burst": args.global_burst, "fault_rate": args.fault_rate, "slow_rate": args.slow_rate,
        "slow_s": args.slow_s, "seed": args.seed, "callback_deadline": args.callback_deadline,
    }
    simulator = BotApiSimulator(
        args.host, args.port, args.mode, files_dir=args.files_dir, **(settings | (LAX if args.lax else {})),
    )
    tokens = [simulator.create_bot(token) for token in args.token] or [simulator.create_bot()]
    print(f"Bot API simulator ({args.mode}) on {simulator.url}", flush=True)
    for token in tokens:
        print(f"bot token: {token}", flush=True)
    heap.settle()
    simulator.serve_forever()


def _rate(value: str) -> float | None:
    return None if value.lower() in ("off", "none") else float(value)


if __name__ == "__main__":
    main()
