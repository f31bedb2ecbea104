"""``fabricsim power``: device power at several offered loads (idle, 10%, 100% ...)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fabricsim.cli.common import scenario_arguments

__all__ = ["add_parser"]


def _load(text: str) -> float:
    from fabricsim import units

    try:
        value = units.parse_percent(text) if text.strip().endswith("%") else float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a load must be between 0% and 100% (got {text!r})")
    return value


def _power(args: argparse.Namespace) -> int:
    import polars as pl

    from fabricsim.experiments.power_load import LOADS, power_at_loads

    table = power_at_loads(args.scenario, loads=args.loads or LOADS, devices=args.devices or [None],
                           overrides=args.overrides)
    with pl.Config(tbl_rows=-1, tbl_cols=12):
        sys.stdout.write(f"{table}\n")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "power_by_load.parquet"
        table.write_parquet(path, compression="zstd")
        sys.stdout.write(f"wrote {path}\n")
    return 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser("power", help="device power at several offered loads (idle, 10%%, 100%% ...)")
    scenario_arguments(command)
    command.add_argument("--load", dest="loads", type=_load, action="append", metavar="LOAD",
                         help="offered load of the scenario's UDP entries, e.g. 0, 10%%, 100%% (repeatable; "
                              "default 0, 10%%, 100%%)")
    command.add_argument("--device", dest="devices", action="append", metavar="NAME",
                         help="switch device preset (repeatable: one series each; default: the scenario's)")
    command.add_argument("--out", metavar="DIR", help="also write power_by_load.parquet there")
    command.set_defaults(handler=_power)
