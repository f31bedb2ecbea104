"""``fabricsim burst-absorption``: the largest lossless many-to-one burst per frame size."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fabricsim.cli.common import FRAME_SIZE, flag_names, integer, scenario_arguments

__all__ = ["add_parser"]


def _burst_absorption(args: argparse.Namespace) -> int:
    import polars as pl

    from fabricsim.experiments.burst_absorption import FRAME_SIZES, burst_absorption

    sizes = args.frame_sizes or list(FRAME_SIZES)
    with flag_names(ports="--ports"):
        table = burst_absorption(args.scenario, device=args.device, ports=args.ports, frame_sizes=sizes,
                                 overrides=args.overrides)
    with pl.Config(tbl_rows=-1):
        sys.stdout.write(f"{table}\n")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "burst_absorption.parquet"
        table.write_parquet(path, compression="zstd")
        sys.stdout.write(f"wrote {path}\n")
    return 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "burst-absorption", help="find the largest lossless many-to-one burst per frame size"
    )
    scenario_arguments(command)
    command.add_argument("--device", metavar="NAME", help="switch device preset (see `fabricsim devices`)")
    command.add_argument("--ports", type=integer(1), default=2, metavar="N",
                         help="senders (ingress ports), default 2; a star scenario grows to N + 1 hosts (at most 65,534)")
    command.add_argument(
        "--frame-size", dest="frame_sizes", type=FRAME_SIZE, action="append", metavar="BYTES",
        help="frame size to test (repeatable; default 192, 512, 1024, 1518, 2048, 4096, 9216 B)",
    )
    command.add_argument("--out", metavar="DIR", help="also write burst_absorption.parquet there")
    command.set_defaults(handler=_burst_absorption)
