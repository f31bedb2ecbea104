"""``fabricsim ai-fabric``: collective iteration times per load-balancing mode, with and without a failed link."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, get_args

from fabricsim.cli.common import flag_names, integer, scenario_arguments

__all__ = ["add_parser"]


def _time(text: str) -> int:
    from fabricsim import units

    try:
        return units.parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cpu() -> float:
    """CPU seconds of this process and of its finished child processes (the sweep's workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _ai_fabric(args: argparse.Namespace) -> int:
    from fabricsim.experiments.ai_fabric import DETECT, FAIL_AT, FAIL_LINK, LOAD_BALANCING, ai_fabric
    from fabricsim.outputs.report.html import fmt_time

    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    started, cpu = time.perf_counter(), _cpu()
    with flag_names(load_balancing="--load-balancing", fail_link="--fail-link", fail_at="--fail-at",
                    detect="--detect", overrides="--set", transport="--transport", workers="--workers"):
        outcome = ai_fabric(
            args.scenario, args.out,
            load_balancing=args.load_balancing or list(LOAD_BALANCING),
            fail_link=tuple(args.fail_link) if args.fail_link else FAIL_LINK,
            fail_at=args.fail_at if args.fail_at is not None else FAIL_AT,
            detect=args.detect if args.detect is not None else DETECT,
            overrides=args.overrides, transport=args.transport, workers=args.workers, backend=args.backend, progress=show_progress,
        )
    for row in outcome.table.iter_rows(named=True):
        if row["status"] != "done":
            line = f"failed: {row['error']}"
        else:
            line = (f"job {fmt_time(row['job_time_ps'])}, slowest iteration {fmt_time(row['iteration_time_max_ps'])}, "
                    f"{row['packets_dropped']:,} drops, {row['timeouts']:,} RTOs")
        sys.stdout.write(f"{row['load_balancing']:>12}  {row['failure']}: {line}\n")
    for path in outcome.files:
        if path.suffix in (".parquet", ".html"):
            sys.stdout.write(f"wrote {path}\n")
    sys.stdout.write(f"{outcome.table.height} points: {outcome.ran} run, {outcome.skipped} already done, "
                     f"{outcome.failed} failed; {time.perf_counter() - started:.1f} s wall, {_cpu() - cpu:.1f} s CPU "
                     "(this process and its workers)\n")
    for error in outcome.errors:
        sys.stderr.write(f"failed: {error}\n")
    return 1 if outcome.failed else 0


def add_parser(commands: Any) -> None:
    from fabricsim.schema.network import LoadBalancingMode

    command = commands.add_parser(
        "ai-fabric",
        help="collective iteration times, background FCT, buffers and drops per load-balancing mode, "
             "with and without a failed link (a sweep and one HTML page)",
    )
    scenario_arguments(command, sweep=True)
    command.add_argument("--out", required=True, metavar="DIR",
                         help="output directory: ai_fabric.html, ai_fabric.parquet, ai_fabric_iterations.parquet, "
                              "and the sweep's catalog and points (resumable)")
    command.add_argument("--load-balancing", action="append", choices=get_args(LoadBalancingMode), metavar="MODE",
                         help="network.switch.load_balancing to compare (repeatable; default ecmp, spray_random, "
                              "adaptive; also spray_rr, flowlet)")
    command.add_argument("--fail-link", nargs=2, metavar=("NODE", "NODE"),
                         help="the link that fails in the failure runs (default rail0 spine0)")
    command.add_argument("--fail-at", type=_time, metavar="TIME", help="when it fails (default 100us)")
    command.add_argument("--detect", type=_time, metavar="TIME",
                         help="how long routing takes to move off it (default 50us)")
    command.add_argument("--transport", choices=("tcp", "roce"),
                         help="run every collective over this transport (default: as the scenario says; "
                              "roce: RDMA WRITEs, docs/models/collectives.md)")
    command.add_argument("--workers", type=integer(1), metavar="N", help="parallel runs (default: CPU count)")
    command.add_argument("--backend", choices=("local", "ray"), default="local", help="where points run")
    progress = command.add_mutually_exclusive_group()
    progress.add_argument("--progress", action="store_true", help="show the progress bar even without a terminal")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    command.set_defaults(handler=_ai_fabric, progress=None)
