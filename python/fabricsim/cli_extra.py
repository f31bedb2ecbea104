"""The ``workloads`` and ``sweep`` subcommands of ``fabricsim``."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

__all__ = ["add_sweep_parser", "add_workloads_parser", "sweep_command", "workloads_command"]


def add_workloads_parser(commands: Any, handler: Callable[[argparse.Namespace], int]) -> None:
    command = commands.add_parser("workloads", help="list the built-in flow-size distributions (CDFs)")
    command.add_argument("files", nargs="*", metavar="CDF", help="also describe these CDF files (paths)")
    command.add_argument("--json", action="store_true", help="print JSON instead of a table")
    command.set_defaults(handler=handler)


def workloads_command(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console
    from rich.table import Table

    from fabricsim.errors import FabricsimError
    from fabricsim.workloads import BUCKET_EDGES, CdfError, bucket_labels, builtin_names, load_cdf

    try:
        rows = [load_cdf(name).describe() for name in [*builtin_names(), *args.files]]
    except CdfError as exc:
        raise FabricsimError(str(exc)) from None
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    labels = bucket_labels(BUCKET_EDGES)
    table = Table(title="flow-size distributions (bucket shares: linear sampling)", title_justify="left")
    table.add_column("name")
    table.add_column("points", justify="right")
    table.add_column("mean (linear)", justify="right")
    table.add_column("mean (step)", justify="right")
    table.add_column("flows % " + " / ".join(labels), justify="right")
    table.add_column("bytes % " + " / ".join(labels), justify="right")
    for row in rows:
        table.add_row(
            row["name"],
            str(row["points"]),
            f"{row['mean_linear']:,.0f} B",
            f"{row['mean_step']:,.0f} B",
            " / ".join(f"{100 * v:.1f}" for v in row["flow_shares"]),
            " / ".join(f"{100 * v:.1f}" for v in row["byte_shares"]),
        )
    Console(highlight=False, width=200).print(table)
    return 0


def add_sweep_parser(commands: Any, handler: Callable[[argparse.Namespace], int]) -> None:
    command = commands.add_parser("sweep", help="run a scenario over a grid of settings (resumable)")
    command.add_argument("scenario", metavar="SCENARIO", help="scenario YAML file")
    command.add_argument(
        "--grid", action="append", required=True, metavar="PATH=V1,V2,...",
        help="a setting and its values, e.g. --grid load=20%%,60%% (repeatable: the full grid is run)",
    )
    command.add_argument("--repeats", type=int, default=1, metavar="K", help="runs per grid point with derived seeds")
    command.add_argument("--out", required=True, metavar="DIR", help="output directory (catalog, points, report)")
    command.add_argument("--backend", choices=("local", "ray"), default="local", help="where points run")
    command.add_argument("--ray-address", metavar="ADDR", help="Ray cluster address (default: start a local Ray)")
    command.add_argument("--workers", type=int, metavar="N", help="parallel runs (default: CPU count)")
    command.add_argument("--x", metavar="PATH", help="grid path on the report's x axis (default: load or the first)")
    command.add_argument("--series", metavar="PATH", help="grid path giving the report's series")
    progress = command.add_mutually_exclusive_group()
    progress.add_argument("--progress", action="store_true", help="show the progress bar even without a terminal")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    command.set_defaults(handler=handler, progress=None)


def sweep_command(args: argparse.Namespace) -> int:
    from fabricsim.sweeps import parse_grid, run_sweep

    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    outcome = run_sweep(
        args.scenario,
        parse_grid(args.grid),
        args.out,
        repeats=args.repeats,
        backend=args.backend,
        workers=args.workers,
        ray_address=args.ray_address,
        progress=show_progress,
        x=args.x,
        series=args.series,
    )
    total = len(outcome.points)
    print(
        f"{total} points: {outcome.ran} run, {outcome.skipped} already done, {outcome.adopted} recovered, "
        f"{outcome.failed} failed; catalog {outcome.out_dir / 'catalog.duckdb'}, report {outcome.report}"
    )
    for error in outcome.errors:
        print(f"failed: {error}", file=sys.stderr)
    return 1 if outcome.failed else 0
