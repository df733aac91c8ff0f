"""`python -m videocopies.adapters.telegram.simulator`: a standalone simulator for the demo."""

from __future__ import annotations

import argparse
from pathlib import Path

from videocopies.adapters.telegram.simulator.server import BotApiSimulator
from videocopies.roles import heap


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Telegram Bot API simulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--mode", choices=("cloud", "local"), default="cloud")
    parser.add_argument("--token", action="append", default=[], help="a bot token to accept (repeatable)")
    parser.add_argument("--files-dir", type=Path, help="where uploaded files are kept (default: a temp dir)")
    parser.add_argument("--chat-rate", type=int, default=20, help="sends per second per chat before 429")
    parser.add_argument("--global-rate", type=int, default=30, help="sends per second per bot before 429")
    parser.add_argument("--callback-deadline", type=float, default=15.0)
    args = parser.parse_args(argv)
    simulator = BotApiSimulator(
        args.host, args.port, args.mode, files_dir=args.files_dir, chat_rate=args.chat_rate,
        global_rate=args.global_rate, callback_deadline=args.callback_deadline,
    )
    tokens = [simulator.create_bot(token) for token in args.token] or [simulator.create_bot()]
    print(f"Bot API simulator ({args.mode}) on {simulator.url}", flush=True)
    for token in tokens:
        print(f"bot token: {token}", flush=True)
    heap.settle()
    simulator.serve_forever()


if __name__ == "__main__":
    main()
