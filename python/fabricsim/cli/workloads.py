"""``fabricsim workloads``: the built-in flow-size distributions (CDFs), and any given CDF files."""

from __future__ import annotations

import argparse
import json
from typing import Any

from fabricsim.errors import FabricsimError

__all__ = ["add_parser"]


def _workloads(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from fabricsim.workloads.cdf import BUCKET_EDGES, CdfError, bucket_labels, builtin_names, load_cdf

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


def add_parser(commands: Any) -> None:
    command = commands.add_parser("workloads", help="list the built-in flow-size distributions (CDFs)")
    command.add_argument("files", nargs="*", metavar="CDF", help="also describe these CDF files (paths)")
    command.add_argument("--json", action="store_true", help="print JSON instead of a table")
    command.set_defaults(handler=_workloads)
