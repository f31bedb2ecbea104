"""Simulation results: the tables of a run with their derived statistics, written to and read from a directory."""

from __future__ import annotations

import json
import math
import os
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import polars as pl

from fabricsim.errors import OutputError
from fabricsim.outputs import rundir
from fabricsim.outputs.fct import bucket_table
from fabricsim.outputs.load import load_summary
from fabricsim.outputs.shares import source_shares
from fabricsim.outputs.tables import RunTables, decode, read_tables
from fabricsim.schema import Scenario, load

__all__ = ["Result"]


def _finite(value: Any) -> Any:
    """JSON-safe copy of ``value``: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(key): _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _write_parquet(frame: pl.DataFrame, path: Path) -> None:
    frame.write_parquet(path, compression="zstd")


def _write_text(text: str, path: Path) -> None:
    path.write_text(text, encoding="utf-8")


def _replace_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary file so that ``path`` is never left half-written."""
    temporary = path.with_name(path.name + ".tmp")
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


class Result(RunTables):
    """Outcome of a simulation run: :class:`~fabricsim.outputs.tables.RunTables`
    (summary, scenario, tables by name) that can be written to a directory and read back.
    """

    @classmethod
    def from_core(cls, raw: Mapping[str, Any], scenario: Optional[Scenario] = None) -> Result:
        """Decode the dict returned by ``fabricsim._core.Simulation.finish()``
        (:func:`~fabricsim.outputs.tables.decode`: missing core tables are
        empty) and, when the scenario is known, compute the derived tables."""
        summary, nodes, tables = decode(raw)
        result = cls(summary, nodes=nodes, tables=tables, scenario=scenario)
        if scenario is not None:
            from fabricsim.outputs.warnings import run_warnings

            result.fct = bucket_table(result)
            load = load_summary(result)
            if load:
                summary["load"] = load
            summary["warnings"] = run_warnings(scenario, summary, result.flows, result.tables())
        result.source_shares = source_shares(result)
        if scenario is not None and any(t.kind == "collective" for t in scenario.traffic):
            from fabricsim.workloads.collectives import collectives_table

            result.collectives = collectives_table(result)
        return result

    def write(self, out_dir: str | os.PathLike[str], report: bool = True) -> list[Path]:
        """Write ``summary.json``, ``timing.json``, ``scenario.yaml``,
        ``nodes.parquet``, one Parquet file per table (:meth:`tables`) and, unless ``report`` is
        false, the HTML report ``report.html`` (last).

        ``out_dir`` must be empty, missing or hold a previous run, whose files
        are removed first (:mod:`fabricsim.outputs.rundir`). Files are written
        one after the other, each atomically; if one fails the others are still
        written, then :class:`~fabricsim.errors.OutputError` lists the
        failures. Every file but ``timing.json`` (wall time, events per second)
        is byte-for-byte reproducible: the same scenario and seed give the same
        bytes.

        Returns the paths written.
        """
        directory = rundir.prepare(out_dir)
        try:
            rundir.remove_previous_run(directory)
        except OSError as exc:
            raise OutputError([(str(directory), f"cannot remove the previous run: {exc.strerror or exc}")]) from None

        summary = json.dumps(_finite(self.summary), sort_keys=True, indent=2, allow_nan=False) + "\n"
        steps: list[tuple[str, Callable[[Path], None]]] = [("summary.json", partial(_write_text, summary))]
        if self.timing:
            timing = json.dumps(_finite(self.timing), sort_keys=True, indent=2, allow_nan=False) + "\n"
            steps.append(("timing.json", partial(_write_text, timing)))
        if self.scenario is not None:
            steps.append(("scenario.yaml", partial(_write_text, self.scenario.to_yaml())))
        for name, frame in self.tables().items():  # nodes.parquet first
            steps.append((f"{name}.parquet", partial(_write_parquet, frame)))
        steps += self._capture_steps()
        if report:

            def write_report(path: Path) -> None:
                from fabricsim.outputs.report import render_html, write_plot_files  # only a run with a report

                page = render_html(self)
                _write_text(page, path)
                write_plot_files(page, directory / "plots")

            steps.append(("report.html", write_report))

        written: list[Path] = []
        failures: list[tuple[str, str]] = []
        for filename, write in steps:
            path = directory / filename
            try:
                _replace_atomically(path, write)
            except Exception as exc:  # keep writing the other files, report at the end
                failures.append((str(path), f"{type(exc).__name__}: {exc}"))
            else:
                written.append(path)
        if failures:
            raise OutputError(failures, written)
        return written

    def _capture_steps(self) -> list[tuple[str, Callable[[Path], None]]]:
        """One step per capture tap of the scenario: ``pcap/<name>.pcapng`` (or ``.pcap``)."""
        if self.scenario is None or not self.scenario.stats.pcap:
            return []
        from fabricsim.outputs.pcap import write_tap

        captures = self.tables().get("captures", pl.DataFrame())
        taps = self.tables().get("capture_taps", pl.DataFrame())
        if not taps.height:
            return []
        ports_of = dict(zip(self.nodes["name"].to_list(), self.nodes["ports"].to_list()))
        links = self.links
        peers = {(a, int(p)): b for a, p, b in zip(links["src"], links["src_port"], links["dst"])}
        steps: list[tuple[str, Callable[[Path], None]]] = []
        for i, tap in enumerate(self.scenario.stats.pcap):
            rows = captures.filter(pl.col("tap") == i) if captures.height else captures
            ports = [tap.port] if tap.port is not None else list(range(int(ports_of[tap.node])))

            def write(path: Path, tap: Any = tap, rows: pl.DataFrame = rows, ports: list[int] = ports) -> None:
                path.parent.mkdir(exist_ok=True)
                write_tap(path, tap, rows, ports, peers)

            steps.append((f"pcap/{tap.file_stem()}.{tap.format}", write))
        return steps

    @classmethod
    def read(cls, out_dir: str | os.PathLike[str]) -> Result:
        """Load a result written by :meth:`write` (for reports and analysis
        without rerunning): every ``<table>.parquet`` there (missing core tables
        are empty), the nodes from ``nodes.parquet`` and ``scenario.yaml`` when
        present."""
        directory = Path(out_dir)
        summary_path = directory / "summary.json"
        if not summary_path.is_file():
            raise OutputError([(str(summary_path), "not found: not a fabricsim run directory")])
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        timing_path = directory / "timing.json"
        timing = json.loads(timing_path.read_text(encoding="utf-8")) if timing_path.is_file() else {}
        scenario = load(directory / "scenario.yaml") if (directory / "scenario.yaml").is_file() else None
        tables = read_tables(directory)
        nodes = tables.pop("nodes", pl.DataFrame())  # a run written before nodes.parquet existed has none
        return cls(summary, nodes=nodes, tables=tables, scenario=scenario, timing=timing)
