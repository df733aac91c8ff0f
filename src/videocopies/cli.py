"""The `videocopies` command: roles and operations are subcommands."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="videocopies", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="walk one order end to end on the in-memory adapters")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from videocopies.roles.demo import main as demo

        return demo()
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
