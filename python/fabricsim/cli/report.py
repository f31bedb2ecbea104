"""``fabricsim report DIR``: rebuild ``report.html`` (and ``plots/``) of a run or sweep directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fabricsim.errors import FabricsimError

__all__ = ["add_parser"]


def _report(args: argparse.Namespace) -> int:
    """Rebuild ``report.html`` (and ``plots/``) of a run or sweep directory from its stored files."""
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


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "report", help="rebuild report.html and plots/ of a run or sweep directory without rerunning"
    )
    command.add_argument("dir", metavar="DIR", help="a directory written by fabricsim run or fabricsim sweep")
    command.set_defaults(handler=_report)
