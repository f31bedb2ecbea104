"""``fabricsim forwarding``: throughput (% of line rate) and latency per frame size and device."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fabricsim.cli.common import FRAME_SIZE, scenario_arguments

__all__ = ["add_parser"]


def _forwarding(args: argparse.Namespace) -> int:
    import polars as pl

    from fabricsim.experiments.features import FORWARDING_FRAME_SIZES, forwarding

    table = forwarding(
        args.scenario,
        frame_sizes=args.frame_sizes or list(FORWARDING_FRAME_SIZES),
        devices=args.devices or [None],
        overrides=args.overrides,
    )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=160):
        sys.stdout.write(f"{table}\n")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "forwarding.parquet"
        table.write_parquet(path, compression="zstd")
        sys.stdout.write(f"wrote {path}\n")
    return 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "forwarding", help="throughput (%% of line rate) and latency per frame size, with the scenario's features on"
    )
    scenario_arguments(command)
    command.add_argument(
        "--device", dest="devices", action="append", metavar="NAME",
        help="switch device preset (repeatable; default: the scenario's switch)",
    )
    command.add_argument(
        "--frame-size", dest="frame_sizes", type=FRAME_SIZE, action="append", metavar="BYTES",
        help="frame size of every UDP source (repeatable; default 64, 82, 97)",
    )
    command.add_argument("--out", metavar="DIR", help="also write forwarding.parquet there")
    command.set_defaults(handler=_forwarding)
