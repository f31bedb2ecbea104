"""The ``fabricsim`` command: ``run``, ``validate``, ``devices``, ``burst-absorption``, ``workloads``,
``sweep``, ``report`` and ``bench``.

Exit status: 0 on success, 2 for problems the user can fix (invalid scenario,
missing file, unwritable output; reported as ``error: ...``), 1 for internal
errors (``internal error: ...``; set ``FABRICSIM_DEBUG=1`` for a traceback),
130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any, Sequence

from fabricsim import __version__, load, run
from fabricsim.errors import FabricsimError, OutputError

__all__ = ["main"]


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


def _cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

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


def _cmd_validate(args: argparse.Namespace) -> int:
    scenario = load(args.scenario, args.overrides)
    sys.stdout.write(json.dumps(scenario.to_resolved(), indent=2) + "\n")
    return 0


def _cmd_devices(args: argparse.Namespace) -> int:
    from fabricsim import devices

    width = max(len(name) for name in devices.names())
    for name in devices.names():
        sys.stdout.write(f"{name:<{width}}  {devices.get(name).summary}\n")
    return 0


def _cmd_burst_absorption(args: argparse.Namespace) -> int:
    from pathlib import Path

    from fabricsim.burst import FRAME_SIZES, burst_absorption

    sizes = args.frame_sizes or list(FRAME_SIZES)
    table = burst_absorption(args.scenario, device=args.device, ports=args.ports, frame_sizes=sizes,
                             overrides=args.overrides)
    with __import__("polars").Config(tbl_rows=-1):
        sys.stdout.write(f"{table}\n")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "burst_absorption.parquet"
        table.write_parquet(path, compression="zstd")
        sys.stdout.write(f"wrote {path}\n")
    return 0


def _cmd_workloads(args: argparse.Namespace) -> int:
    from fabricsim.cli_extra import workloads_command

    return workloads_command(args)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from fabricsim.cli_extra import sweep_command

    return sweep_command(args)


def _cmd_report(args: argparse.Namespace) -> int:
    """Rebuild ``report.html`` (and ``plots/``) of a run or sweep directory from its stored files."""
    import json
    from pathlib import Path

    directory = Path(args.dir)
    if (directory / "summary.json").is_file():
        from fabricsim.outputs.report import write_report
        from fabricsim.outputs.results import Result

        path = write_report(Result.read(directory), directory / "report.html")
    elif (directory / "sweep.parquet").is_file():
        import polars as pl

        from fabricsim.sweeps.report import write_report as write_sweep_report

        meta_path = directory / "sweep.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        table = pl.read_parquet(directory / "sweep.parquet")
        path = write_sweep_report(
            table, meta.get("grid", []), directory / "report.html",
            x=meta.get("x"), series=meta.get("series"), title=meta.get("title", "sweep"),
        )
    else:
        raise FabricsimError(
            f"{directory}: neither a run directory (summary.json) nor a sweep directory (sweep.parquet)"
        )
    print(f"wrote {path}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from fabricsim import bench

    return int(bench.main(args) or 0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fabricsim", description="Deterministic packet-level simulator of data-center switch fabrics."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def scenario_arguments(command: argparse.ArgumentParser) -> None:
        command.add_argument("scenario", metavar="SCENARIO", help="scenario YAML file")
        command.add_argument(
            "--set",
            dest="overrides",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a scenario setting, e.g. --set traffic.0.rate=5Gbps (repeatable)",
        )

    run_command = commands.add_parser("run", help="simulate a scenario and write its results")
    scenario_arguments(run_command)
    run_command.add_argument("--out", required=True, metavar="DIR", help="output directory")
    run_command.add_argument("--seed", type=int, metavar="N", help="random seed, replacing the scenario's")
    progress = run_command.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", action="store_true", help="show the progress bar even when stderr is not a terminal"
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
    run_command.set_defaults(handler=_cmd_run, progress=None)

    validate_command = commands.add_parser("validate", help="check a scenario and print its resolved JSON")
    scenario_arguments(validate_command)
    validate_command.set_defaults(handler=_cmd_validate)

    devices_command = commands.add_parser("devices", help="list the switch device presets")
    devices_command.set_defaults(handler=_cmd_devices)

    burst_command = commands.add_parser(
        "burst-absorption", help="find the largest lossless many-to-one burst per frame size"
    )
    scenario_arguments(burst_command)
    burst_command.add_argument("--device", metavar="NAME", help="switch device preset (see `fabricsim devices`)")
    burst_command.add_argument("--ports", type=int, default=2, metavar="N", help="senders (ingress ports), default 2")
    burst_command.add_argument(
        "--frame-size", dest="frame_sizes", type=int, action="append", metavar="BYTES",
        help="frame size to test (repeatable; default 192..9216 B)",
    )
    burst_command.add_argument("--out", metavar="DIR", help="also write burst_absorption.parquet there")
    burst_command.set_defaults(handler=_cmd_burst_absorption)

    from fabricsim.cli_extra import add_sweep_parser, add_workloads_parser

    add_workloads_parser(commands, _cmd_workloads)
    add_sweep_parser(commands, _cmd_sweep)

    report_command = commands.add_parser(
        "report", help="rebuild report.html and plots/ of a run or sweep directory without rerunning"
    )
    report_command.add_argument("dir", metavar="DIR", help="a directory written by fabricsim run or fabricsim sweep")
    report_command.set_defaults(handler=_cmd_report)

    bench_command = commands.add_parser("bench", help="run the performance benchmarks")
    bench_command.add_argument("--json", action="store_true", help="print results as JSON")
    bench_command.add_argument("--quick", action="store_true", help="run a short version")
    bench_command.add_argument(
        "--scenario", action="append", metavar="NAME", help="run only this bench scenario (repeatable)"
    )
    bench_command.add_argument(
        "--ns3", action="store_true", help="also time the ns-3 twin of scenarios that have one (needs pip install ns3)"
    )
    bench_command.set_defaults(handler=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fabricsim`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except FabricsimError as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:
            print(f"error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("FABRICSIM_DEBUG") == "1":
            traceback.print_exc()
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
