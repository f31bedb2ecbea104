"""``fabricsim sweep``: a scenario over a grid of settings, resumable (:mod:`fabricsim.sweeps`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fabricsim.cli.common import scenario_arguments

__all__ = ["add_parser"]


def _sweep(args: argparse.Namespace) -> int:
    from fabricsim.sweeps import parse_grid, run_sweep

    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    outcome = run_sweep(
        args.scenario,
        parse_grid(args.grid),
        args.out,
        repeats=args.repeats,
        overrides=args.overrides,
        backend=args.backend,
        workers=args.workers,
        ray_address=args.ray_address,
        progress=show_progress,
        x=args.x,
        series=args.series,
        report=args.report,
    )
    total = len(outcome.points)
    report = outcome.report if args.report else f"not drawn (fabricsim report {args.out} draws it)"
    print(
        f"{total} points: {outcome.ran} run, {outcome.skipped} already done, {outcome.adopted} recovered, "
        f"{outcome.failed} failed; catalog {outcome.out_dir / 'catalog.duckdb'}, report {report}"
    )
    for error in outcome.errors:
        print(f"failed: {error}", file=sys.stderr)
    return 1 if outcome.failed else 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser("sweep", help="run a scenario over a grid of settings (resumable)")
    scenario_arguments(command, sweep=True)
    command.add_argument(
        "--grid", action="append", required=True, metavar="PATH=V1,V2,...",
        help="a setting and its values, e.g. --grid load=20%%,60%% (repeatable: the full grid is run); "
        "values are YAML, split on commas outside brackets and quotes: --grid 'drr_weights=[1,2],[3,4]'",
    )
    command.add_argument("--repeats", type=int, default=1, metavar="K", help="runs per grid point with derived seeds")
    command.add_argument("--out", required=True, metavar="DIR", help="output directory (catalog, points, report)")
    command.add_argument("--backend", choices=("local", "ray"), default="local", help="where points run")
    command.add_argument("--ray-address", metavar="ADDR", help="Ray cluster address (default: start a local Ray)")
    command.add_argument("--workers", type=int, metavar="N", help="parallel runs (default: CPU count)")
    command.add_argument("--x", metavar="PATH", help="grid path on the report's x axis (default: load or the first)")
    command.add_argument("--series", metavar="PATH", help="grid path giving the report's series")
    command.add_argument(
        "--no-report",
        dest="report",
        action="store_false",
        help="write the catalog and sweep.parquet without report.html (`fabricsim report DIR` draws it later)",
    )
    progress = command.add_mutually_exclusive_group()
    progress.add_argument("--progress", action="store_true", help="show the progress bar even without a terminal")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    command.set_defaults(handler=_sweep, progress=None)
