"""``fabricsim bench``: speed of the core on fixed scenarios (:mod:`fabricsim.bench`); ``--htsim DIR``:
fabricsim against htsim on the same work (:mod:`fabricsim.bench.htsim`); ``--ns3 --pair NAME``: against
ns-3 on the fat-tree work of those pairs (:mod:`fabricsim.bench.ns3_pairs`)."""

from __future__ import annotations

import argparse
from typing import Any

from fabricsim.cli.common import integer
from fabricsim.errors import FabricsimError

__all__ = ["add_parser"]


def _bench(args: argparse.Namespace) -> int:
    if args.htsim is not None:
        from fabricsim.bench import htsim

        return htsim.main(args.htsim, args.pair, args.quick, args.rounds, args.json)
    if args.pair and args.ns3:
        from fabricsim.bench import ns3_pairs

        return ns3_pairs.main(args.pair, args.quick, args.rounds, args.json)
    if args.pair:
        raise FabricsimError("--pair: only with --htsim or --ns3")
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
        "--ns3", action="store_true",
        help="also time the ns-3 twin of scenarios that have one; with --pair, time the fat-tree pairs against "
             "their ns-3 twin instead (needs pip install ns3)"
    )
    command.add_argument(
        "--htsim", metavar="DIR",
        help="instead, time fabricsim against htsim on the same work (htsim and its drivers built into DIR)",
    )
    command.add_argument(
        "--pair", action="append", metavar="NAME",
        help="with --htsim: run only this pair (repeatable; incast-16, fattree-k4, fattree-k8, fattree-k16 and "
             "their -dctcp variants: CPU time; spray-k8: "
             "completion times of packet spraying against htsim's EQDS and NDP); with --ns3: a fat-tree pair",
    )
    command.add_argument(
        "--rounds", type=integer(1), default=2, metavar="N",
        help="with --htsim or --ns3 --pair: rounds of the reference then fabricsim (default 2)",
    )
    command.set_defaults(handler=_bench)
