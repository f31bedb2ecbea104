"""``fabricsim fairness``: each source's share of one output port, per number of sources, frame size and device."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fabricsim.cli.common import FRAME_SIZE, flag_names, integer, scenario_arguments

__all__ = ["add_parser"]


def _fairness(args: argparse.Namespace) -> int:
    import polars as pl

    from fabricsim.experiments.features import FAIRNESS_FRAME_SIZES, FAIRNESS_SOURCES, fairness

    with flag_names(sources="--sources"):
        shares, summary = fairness(
            args.scenario,
            sources=args.sources or list(FAIRNESS_SOURCES),
            frame_sizes=args.frame_sizes or list(FAIRNESS_FRAME_SIZES),
            devices=args.devices or [None],
            seed=args.seed,
            overrides=args.overrides,
        )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=160, fmt_str_lengths=80):
        sys.stdout.write(f"{summary}\n")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, frame in (("fairness_shares", shares), ("fairness_summary", summary)):
            path = out / f"{name}.parquet"
            frame.write_parquet(path, compression="zstd")
            sys.stdout.write(f"wrote {path}\n")
    return 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "fairness", help="each source's share of one output port under fan-in (random sources, seeded)"
    )
    scenario_arguments(command)
    command.add_argument(
        "--device", dest="devices", action="append", metavar="NAME",
        help="switch device preset (repeatable; default: the scenario's switch)",
    )
    command.add_argument(
        "--sources", type=integer(2), action="append", metavar="N",
        help="number of sources, from 2 to the hosts other than the destination (repeatable; default 6, 8, 16)"
    )
    command.add_argument(
        "--frame-size", dest="frame_sizes", type=FRAME_SIZE, action="append", metavar="BYTES",
        help="frame size (repeatable; default 64, 97, 1280)",
    )
    command.add_argument("--seed", type=integer(0, 2**64 - 1), default=1, help="seed of the random choice of sources (default 1)")
    command.add_argument("--out", metavar="DIR", help="also write fairness_shares.parquet and fairness_summary.parquet")
    command.set_defaults(handler=_fairness)
