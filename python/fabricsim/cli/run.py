"""``fabricsim run`` (simulate a scenario, write its results) and ``fabricsim validate``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fabricsim.cli.common import scenario_arguments
from fabricsim.errors import OutputError
from fabricsim.schema import load

__all__ = ["add_parser"]


def _summary_rows(summary: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Flatten the summary into sorted (dotted key, formatted value) rows."""
    rows = []
    for key in sorted(summary):
        value = summary[key]
        if isinstance(value, dict):
            rows.extend(_summary_rows(value, f"{prefix}{key}."))
        elif isinstance(value, float):
            rows.append((f"{prefix}{key}", f"{value:.6g}"))
        elif isinstance(value, int) and not isinstance(value, bool):
            rows.append((f"{prefix}{key}", f"{value:,}"))
        else:
            rows.append((f"{prefix}{key}", str(value)))
    return rows


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from fabricsim.runner import run

    scenario = load(args.scenario, args.overrides)
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    result = run(scenario, seed=args.seed, progress=show_progress)
    failure = None
    try:
        written = result.write(args.out)
    except OutputError as exc:
        written, failure = exc.written, exc

    console = Console(highlight=False)
    table = Table(title=Text(f"{scenario.name}: summary"), title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in _summary_rows(result.summary):
        table.add_row(Text(key), Text(value))
    console.print(table)
    for path in written:
        console.print(f"wrote {path}", markup=False, soft_wrap=True)
    if failure is not None:
        raise failure
    return 0


def _validate(args: argparse.Namespace) -> int:
    scenario = load(args.scenario, args.overrides)
    sys.stdout.write(json.dumps(scenario.to_resolved(), indent=2) + "\n")
    return 0


def add_parser(commands: Any) -> None:
    run_command = commands.add_parser("run", help="simulate a scenario and write its results")
    scenario_arguments(run_command)
    run_command.add_argument("--out", required=True, metavar="DIR", help="output directory")
    run_command.add_argument("--seed", type=int, metavar="N", help="random seed, replacing the scenario's")
    progress = run_command.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", action="store_true", help="show the progress bar even when stderr is not a terminal"
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    run_command.set_defaults(handler=_run, progress=None)

    validate_command = commands.add_parser("validate", help="check a scenario and print its resolved JSON")
    scenario_arguments(validate_command)
    validate_command.set_defaults(handler=_validate)
