"""Simulation results: summary and tables decoded from the core's raw output."""

from __future__ import annotations

import json
import math
import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
import polars as pl

from fabricsim.errors import OutputError

if TYPE_CHECKING:
    from fabricsim.schema import Scenario

__all__ = ["Result"]

_DTYPES = {"u8": "<u1", "u32": "<u4", "u64": "<u8", "i64": "<i8", "f64": "<f8", "bool": "?"}
_NODE_COLUMNS = ("node", "src", "dst", "src_node", "dst_node", "host")
_TABLES = ("flows", "queues", "drops", "links", "throughput", "marks", "pools", "buffers", "queue_peaks", "pauses")
# Tables of the switch-buffer features (and PFC pauses), absent from older outputs.
_BUFFER_TABLES = ("marks", "pools", "buffers", "queue_peaks", "pauses")


def _labels(column: str, codes: np.ndarray[Any, np.dtype[Any]], labels: Sequence[str]) -> pl.Series:
    """Replace integer ``codes`` by ``labels[code]``."""
    if codes.size and int(codes.max()) >= len(labels):
        raise ValueError(f"column {column!r}: code {int(codes.max())} has no label (only {len(labels)} labels)")
    return pl.Series(column, list(labels), dtype=pl.String).gather(codes)


def _decode_table(
    name: str,
    columns: Mapping[str, tuple[str, bytes]],
    strings: Mapping[str, Sequence[str]],
    node_names: Sequence[str],
) -> pl.DataFrame:
    """Build one table from ``{column: (dtype, little-endian bytes)}``.

    Columns with a dictionary in ``strings`` (key ``"table.column"``) and, outside
    the ``nodes`` table, node id columns are decoded to strings.
    """
    series = []
    for column, (dtype, data) in columns.items():
        if dtype not in _DTYPES:
            raise ValueError(f"table {name!r}, column {column!r}: unknown dtype {dtype!r}")
        values = np.frombuffer(data, dtype=_DTYPES[dtype])
        dictionary = strings.get(f"{name}.{column}")
        if dictionary is not None:
            series.append(_labels(column, values, dictionary))
        elif name != "nodes" and column in _NODE_COLUMNS and node_names:
            series.append(_labels(column, values, node_names))
        elif dtype == "i64":
            # The core marks "no value" in signed columns with -1 (e.g. the FCT
            # of a flow that did not complete): these become nulls.
            series.append(pl.Series(column, values).replace(-1, None))
        else:
            series.append(pl.Series(column, values))
    return pl.DataFrame(series)


def _with_names(nodes: pl.DataFrame, node_names: Sequence[str]) -> pl.DataFrame:
    """Add a ``name`` column after ``id``, and ``id`` (the row number) if missing."""
    if "name" in nodes.columns or not node_names:
        return nodes
    if not nodes.width:
        nodes = pl.DataFrame([pl.Series("id", np.arange(len(node_names), dtype=np.uint32))])
    elif "id" not in nodes.columns:
        nodes = nodes.insert_column(0, pl.Series("id", np.arange(nodes.height, dtype=np.uint32)))
    names = _labels("name", nodes["id"].to_numpy(), node_names)
    return nodes.insert_column(nodes.columns.index("id") + 1, names)


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


class Result:
    """Outcome of a simulation run.

    Attributes:
        summary: run-level figures from the core, plus ``scenario``, ``seed``,
            ``wall_time_s`` and ``events_per_sec``.
        nodes: ``id``, ``name``, ``kind`` and any other per-node columns.
        flows, queues, drops, links: the core's tables, node ids replaced by
            node names and coded string columns decoded.
        scenario: the scenario that was run (seed included), when known.
    """

    def __init__(
        self,
        summary: dict[str, Any],
        *,
        nodes: pl.DataFrame,
        flows: pl.DataFrame,
        queues: pl.DataFrame,
        drops: pl.DataFrame,
        links: pl.DataFrame,
        throughput: pl.DataFrame | None = None,
        scenario: Scenario | None = None,
    ) -> None:
        self.summary = summary
        self.nodes = nodes
        self.flows = flows
        self.queues = queues
        self.drops = drops
        self.links = links
        self.throughput = throughput if throughput is not None else pl.DataFrame()
        # ECN marks, sampled pool occupancy, buffer and queue high-water marks.
        self.marks = pl.DataFrame()
        self.pools = pl.DataFrame()
        self.buffers = pl.DataFrame()
        self.queue_peaks = pl.DataFrame()
        # PFC pause frames and paused time per (node, port, priority).
        self.pauses = pl.DataFrame()
        # FCT statistics per size bucket (fabricsim.fct); empty without TCP flows.
        self.fct = pl.DataFrame()
        self.scenario = scenario

    @classmethod
    def from_core(cls, raw: Mapping[str, Any], scenario: Scenario | None = None) -> Result:
        """Decode the dict returned by ``fabricsim._core.Simulation.finish()``.

        Expected keys: ``summary`` (dict), ``tables`` (``{table: {column: (dtype,
        bytes)}}``), ``node_names`` (names indexed by node id) and optionally
        ``strings`` (``{"table.column": [labels]}`` for columns holding codes).
        Missing tables are empty.
        """
        tables = raw.get("tables", {})
        strings = raw.get("strings", {})
        node_names = list(raw.get("node_names", []))

        def table(name: str) -> pl.DataFrame:
            return _decode_table(name, tables.get(name, {}), strings, node_names)

        nodes = _with_names(table("nodes"), node_names)
        result = cls._from_tables(dict(raw.get("summary", {})), nodes, table, _BUFFER_TABLES, scenario)
        if scenario is not None:
            from fabricsim.fct import bucket_table

            result.fct = bucket_table(result)
        return result

    def tables(self) -> dict[str, pl.DataFrame]:
        """The tables written by :meth:`write`, by name (``fct`` only when the run has TCP flows)."""
        tables = {name: getattr(self, name) for name in _TABLES}
        if getattr(self, "fct", None) is not None and self.fct.height:
            tables["fct"] = self.fct
        return tables

    def write(self, out_dir: str | os.PathLike[str], report: bool = True) -> list[Path]:
        """Write ``summary.json``, ``scenario.yaml``, one Parquet file per table
        and, unless ``report`` is false, the HTML report ``report.html`` (last).

        Files are written one after the other, each atomically; if one fails the
        others are still written, then :class:`~fabricsim.errors.OutputError`
        lists the failures. Output is byte-for-byte reproducible, apart from the
        ``wall_time_s`` and ``events_per_sec`` summary entries.

        Returns the paths written.
        """
        directory = Path(out_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError([(str(directory), exc.strerror or str(exc))]) from exc

        summary = json.dumps(_finite(self.summary), sort_keys=True, indent=2, allow_nan=False) + "\n"
        steps: list[tuple[str, Callable[[Path], None]]] = [("summary.json", partial(_write_text, summary))]
        if self.scenario is not None:
            steps.append(("scenario.yaml", partial(_write_text, self.scenario.to_yaml())))
        for name, frame in self.tables().items():
            steps.append((f"{name}.parquet", partial(_write_parquet, frame)))
        if report:
            from fabricsim.report import render_html, write_plot_files

            def write_report(path: Path) -> None:
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

    @classmethod
    def read(cls, out_dir: str | os.PathLike[str]) -> Result:
        """Load a result written by :meth:`write` (for reports and analysis
        without rerunning). Missing tables are empty; ``scenario.yaml`` is
        loaded when present."""
        directory = Path(out_dir)
        summary_path = directory / "summary.json"
        if not summary_path.is_file():
            raise OutputError([(str(summary_path), "not found: not a fabricsim run directory")])
        summary = json.loads(summary_path.read_text(encoding="utf-8"))

        def table(name: str) -> pl.DataFrame:
            path = directory / f"{name}.parquet"
            return pl.read_parquet(path) if path.is_file() else pl.DataFrame()

        scenario = None
        if (directory / "scenario.yaml").is_file():
            from fabricsim.schema import load

            scenario = load(directory / "scenario.yaml")
        return cls._from_tables(summary, pl.DataFrame(), table, (*_BUFFER_TABLES, "fct"), scenario)

    @classmethod
    def _from_tables(
        cls,
        summary: dict[str, Any],
        nodes: pl.DataFrame,
        table: Callable[[str], pl.DataFrame],
        extra: Sequence[str],
        scenario: Scenario | None,
    ) -> Result:
        """A result with ``nodes``, the core tables from ``table(name)`` and the ``extra`` ones set as attributes."""
        result = cls(
            summary,
            nodes=nodes,
            flows=table("flows"),
            queues=table("queues"),
            drops=table("drops"),
            links=table("links"),
            throughput=table("throughput"),
            scenario=scenario,
        )
        for name in extra:
            setattr(result, name, table(name))
        return result

    def __repr__(self) -> str:
        shapes = ", ".join(f"{name}={frame.height} rows" for name, frame in self.tables().items())
        return f"Result(summary={len(self.summary)} entries, {shapes})"
