"""``fabricsim run`` (simulate a scenario, write its results) and ``fabricsim validate``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from fabricsim.cli import validate_linux
from fabricsim.cli.common import scenario_arguments
from fabricsim.errors import FabricsimError, OutputError, RunInterrupted, SimulationError
from fabricsim.schema import load

__all__ = ["add_parser", "print_warnings"]


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


#: Environment variables with which rich styles output that is not a terminal.
_RICH_FORCING = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


def _console_width() -> int:
    """The width rich gives a console: ``COLUMNS``, else the first standard
    stream that is a terminal, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return int(columns)
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns
        except OSError:
            continue
    return 80


def _plain_table(title: str, rows: list[tuple[str, str]]) -> str | None:
    """The summary table as rich draws it (heavy header, left-justified title)
    for output that is not a terminal, or None where rich would do more than
    lay it out (colour, wrapping a line that does not fit, wide characters):
    importing and running rich costs more than the rest of a small run's
    command line."""
    if sys.stdout.isatty() or any(os.environ.get(name) for name in _RICH_FORCING):
        return None
    cells = [title, *(text for row in rows for text in row)]
    if not all(text.isascii() and text.isprintable() for text in cells):
        return None
    left = max([len("metric"), *(len(key) for key, _ in rows)])
    right = max([len("value"), *(len(value) for _, value in rows)])
    width = left + right + 7
    if width > _console_width() or len(title) > width:
        return None
    lines = [title.ljust(width), f"┏{'━' * (left + 2)}┳{'━' * (right + 2)}┓",
             f"┃ {'metric'.ljust(left)} ┃ {'value'.rjust(right)} ┃", f"┡{'━' * (left + 2)}╇{'━' * (right + 2)}┩"]
    lines += [f"│ {key.ljust(left)} │ {value.rjust(right)} │" for key, value in rows]
    lines.append(f"└{'─' * (left + 2)}┴{'─' * (right + 2)}┘")
    return "\n".join(lines) + "\n"


def _print_outcome(result: Any, written: list[Any], title: str) -> None:
    shown = {key: value for key, value in {**result.summary, **result.timing}.items() if key != "warnings"}
    rows = _summary_rows(shown)
    plain = _plain_table(title, rows)
    if plain is not None:
        sys.stdout.write(plain)
        sys.stdout.writelines(f"wrote {path}\n" for path in written)
        sys.stdout.flush()
        print_warnings(result.summary.get("warnings") or [])
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False)
    table = Table(title=Text(title), title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in rows:
        table.add_row(Text(key), Text(value))
    console.print(table)
    for path in written:
        console.print(f"wrote {path}", markup=False, soft_wrap=True)
    print_warnings(result.summary.get("warnings") or [])


def _write(result: Any, out: str, report: bool = True) -> tuple[list[Any], OutputError | None]:
    try:
        return result.write(out, report=report), None
    except OutputError as exc:
        return exc.written, exc


def _run(args: argparse.Namespace) -> int:
    from fabricsim.outputs import rundir
    from fabricsim.runner import run

    scenario = load(args.scenario, args.overrides)
    rundir.prepare(args.out)  # an unusable --out is reported before the simulation, not after
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    try:
        result = run(scenario, seed=args.seed, progress=show_progress, prepare_report=args.report)
    except (RunInterrupted, SimulationError) as exc:
        # Keep what was computed: the partial results are written, then the run fails.
        # After Ctrl-C only the tables, so the command ends within a second; the
        # report can be drawn from them later, byte for byte the same.
        if exc.result is not None:
            report = args.report and not isinstance(exc, RunInterrupted)
            written, _ = _write(exc.result, args.out, report)
            _print_outcome(exc.result, written, f"{scenario.name}: summary (partial: the run stopped early)")
            if args.report and not report:
                print(f"report not drawn after the interrupt: fabricsim report {args.out} draws it", file=sys.stderr)
        raise
    written, failure = _write(result, args.out, args.report)
    _print_outcome(result, written, f"{scenario.name}: summary")
    if failure is not None:
        raise failure
    return 0


def print_warnings(warnings: list[str]) -> None:
    """Each warning on stderr, prominently."""
    if not warnings:
        return
    from rich.console import Console
    from rich.text import Text

    err = Console(stderr=True, highlight=False)
    for message in warnings:
        err.print(Text("WARNING: ", style="bold red") + Text(message, style="yellow"), soft_wrap=True)


def _validate_linux(args: argparse.Namespace) -> int:
    return validate_linux.command(args)


def _validate(args: argparse.Namespace) -> int:
    from fabricsim.outputs.warnings import scenario_warnings
    from fabricsim.runner import check

    scenario = load(args.scenario, args.overrides)
    resolved = check(scenario)  # the same checks as run: the schema, then the core builds the world
    sys.stdout.write(json.dumps(resolved, indent=2, allow_nan=False) + "\n")
    print_warnings(scenario_warnings(scenario))
    return 0


def add_parser(commands: Any) -> None:
    run_command = commands.add_parser("run", help="simulate a scenario and write its results")
    scenario_arguments(run_command)
    run_command.add_argument("--out", required=True, metavar="DIR", help="output directory")
    run_command.add_argument("--seed", type=int, metavar="N", help="random seed, replacing the scenario's")
    run_command.add_argument(
        "--no-report",
        dest="report",
        action="store_false",
        help="write the tables without report.html and its plots (`fabricsim report DIR` draws them later)",
    )
    progress = run_command.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", action="store_true", help="show the progress bar even when stderr is not a terminal"
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    run_command.set_defaults(handler=_run, progress=None)

    validate_command = commands.add_parser(
        "validate",
        help="check a scenario as run does (without running it) and print its resolved JSON",
        description="Check a scenario as run does, without running it, and print its resolved JSON. "
        "`fabricsim validate linux --help`: the comparison with real Linux, a command of its own.",
    )
    scenario_arguments(validate_command)
    validate_command.set_defaults(handler=_validate)
    # `fabricsim validate linux ...` (the command line names it as two words; main() joins them)
    linux_command = commands.add_parser(
        "validate linux", help="run a TCP dumbbell in real Linux (root) or from stored measurements, "
        "beside its fabricsim twin", description=validate_linux.DESCRIPTION)
    validate_linux.add_arguments(linux_command)
    linux_command.set_defaults(handler=_validate_linux)
