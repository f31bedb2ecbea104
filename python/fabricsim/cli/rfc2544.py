"""``fabricsim rfc2544``: RFC 2544 throughput, latency, frame loss and back-to-back tests per frame size."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fabricsim.cli.common import FRAME_SIZE, flag_names, integer, scenario_arguments
from fabricsim.errors import ScenarioError

__all__ = ["add_parser"]


def _load(text: str) -> float:
    from fabricsim import units

    value = units.parse_percent(text) if text.strip().endswith("%") else float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a load must be > 0% and <= 100% (got {text!r})")
    return value


def _time(text: str) -> int:
    from fabricsim import units

    try:
        value = units.parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0 (got {text!r})")
    return value


def _pair(text: str) -> tuple[str, str]:
    src, sep, dst = text.partition(":")
    if not sep or not src or not dst:
        raise argparse.ArgumentTypeError(f"expected SRC:DST (two host names), got {text!r}")
    return src, dst


def _rfc2544(args: argparse.Namespace) -> int:
    import polars as pl

    from fabricsim.experiments.rfc2544 import DEVICE_TESTS, FRAME_SIZES, Settings, rfc2544
    from fabricsim.experiments.rfc2544_report import write_rfc2544

    flags = flag_names(trial_ps="--trial", wait_ps="--wait", resolution="--resolution", latency_rate="--rate",
                       max_burst="--max-burst", messages="--messages")
    with flags:
        settings = Settings(
            trial_ps=args.trial,
            wait_ps=args.wait,
            resolution=args.resolution,
            latency_rate=args.rate,
            max_burst=args.max_burst,
            messages=args.messages,
        )
    try:
        tables = rfc2544(
            args.scenario,
            tests=args.tests or DEVICE_TESTS,
            frame_sizes=args.frame_sizes or FRAME_SIZES,
            devices=args.devices or [None],
            pairs=args.pairs or [None],
            settings=settings,
            overrides=args.overrides,
            stacks=args.stacks or ["scenario"],
        )
    except ValueError as exc:  # a tester pair whose path cannot be followed, an unknown test, a stack
        raise ScenarioError([("rfc2544", str(exc))], args.scenario) from None
    with pl.Config(tbl_rows=-1, tbl_cols=12):
        for name, table in tables.items():
            if table.height:
                sys.stdout.write(f"{name}\n{table}\n")
    if args.out:
        for path in write_rfc2544(tables, Path(args.out), title=f"RFC 2544: {Path(args.scenario).stem}"):
            sys.stdout.write(f"wrote {path}\n")
    return 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "rfc2544", help="RFC 2544 throughput, latency, frame loss and back-to-back tests per frame size"
    )
    scenario_arguments(command)
    command.add_argument(
        "--test", dest="tests", action="append",
        choices=["throughput", "latency", "loss", "back_to_back", "host_latency", "socket"],
        help="test to run (repeatable; default the four device tests with ideal tester ports; host_latency: UDP or TCP "
             "ping-pong end to end through the hosts' datapath model, with where the time goes; socket: streaming "
             "MB/s per message size)",
    )
    command.add_argument(
        "--stack", dest="stacks", action="append", metavar="STACK",
        help="host stack series of host_latency/socket (repeatable): 'scenario' (the scenario's network.host.model, "
             "default), a host preset (kernel-bypass, linux-kernel) on the scenario's NIC, ':tcp' for TCP "
             "(socket only), e.g. linux-kernel:tcp",
    )
    # At most experiments.rfc2544.MAX_MESSAGES (not imported here: it imports polars).
    command.add_argument("--messages", type=integer(1, 10_000_000), default=20, metavar="N",
                         help="ping-pong messages per frame size of host_latency (default 20, at most 10,000,000)")
    command.add_argument(
        "--frame-size", dest="frame_sizes", type=FRAME_SIZE, action="append", metavar="BYTES",
        help="frame size (repeatable; default 64 128 256 512 1024 1280 1518 2176 9216, those above the path's MTU "
             "are skipped)",
    )
    command.add_argument("--device", dest="devices", action="append", metavar="NAME",
                         help="switch device preset to test (repeatable: one series each; default: the scenario's)")
    command.add_argument("--pair", dest="pairs", action="append", type=_pair, metavar="SRC:DST",
                         help="tester ports (repeatable: one series each; default: the first two hosts)")
    command.add_argument("--trial", type=_time, default=10_000_000_000, metavar="TIME",
                         help="length of one trial in simulated time (default 10ms)")
    command.add_argument("--wait", type=_time, default=None, metavar="TIME",
                         help="time after a trial within which frames count as received "
                              "(default: unloaded latency + one frame time)")
    command.add_argument("--resolution", type=_load, default=0.001, metavar="LOAD",
                         help="throughput search resolution (default 0.1%%)")
    command.add_argument("--rate", type=_load, default=None, metavar="LOAD",
                         help="offered load of the latency test (default: the throughput found)")
    command.add_argument("--max-burst", type=integer(1, 2**64 - 1), default=None, metavar="FRAMES",
                         help="back-to-back cap (default: one trial's frames at line rate)")
    command.add_argument("--out", metavar="DIR", help="write rfc2544_<test>.parquet and rfc2544.html there")
    command.set_defaults(handler=_rfc2544)
