"""``fabricsim bench``: speed of the core on fixed scenarios (:mod:`fabricsim.bench`)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser"]


def _bench(args: argparse.Namespace) -> int:
    from fabricsim.bench.run import main

    return int(main(args) or 0)


def add_parser(commands: Any) -> None:
    command = commands.add_parser("bench", help="run the performance benchmarks")
    command.add_argument("--json", action="store_true", help="print results as JSON")
    command.add_argument("--quick", action="store_true", help="run a short version")
    command.add_argument(
        "--scenario", action="append", metavar="NAME", help="run only this bench scenario (repeatable)"
    )
    command.add_argument(
        "--ns3", action="store_true", help="also time the ns-3 twin of scenarios that have one (needs pip install ns3)"
    )
    command.set_defaults(handler=_bench)
