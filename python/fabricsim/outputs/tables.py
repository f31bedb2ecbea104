"""The tables of one run: decoding the core's column buffers, and access by name.

The core returns tables as ``{name: {column: (dtype, little-endian bytes)}}``
(``docs/contract.md``). Every table it returns is decoded, whatever its name,
so a table added to the core reaches Python, the Parquet files and
``Result.tables()`` without a change here:

- ``nodes`` names the nodes: node id columns of the other tables become
  names. It is kept apart (``result.nodes``) and not written to a file.
- :data:`CORE_TABLES` always exist (empty when a run has none) and are listed
  first, in that order; other core tables follow in the core's order.
- :data:`DERIVED_TABLES` are computed in Python from the others (``fct``:
  :mod:`fabricsim.outputs.fct`; ``source_shares``:
  :mod:`fabricsim.outputs.shares`; ``collectives``:
  :mod:`fabricsim.workloads.collectives`); they are listed last, and only when not empty.

Known tables are also attributes (``result.flows``); any other table is read
with ``result.tables()["name"]`` or, where the name is a valid identifier,
``result.name``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

import polars as pl

if TYPE_CHECKING:
    import numpy as np

    from fabricsim.schema import Scenario

__all__ = ["CORE_TABLES", "DERIVED_TABLES", "RunTables", "decode", "read_tables"]

CORE_TABLES = ("flows", "queues", "drops", "links", "throughput", "marks", "pools", "buffers", "queue_peaks", "pauses")
"""Tables every run has, in the order they are listed and written."""
DERIVED_TABLES = ("fct", "source_shares", "collectives")
"""Tables computed in Python after a run, written last and only when not empty."""
NODES = "nodes"

_DTYPES = {"u8": "<u1", "u32": "<u4", "u64": "<u8", "i64": "<i8", "f64": "<f8", "bool": "?"}
#: Each dtype of the core as a ``memoryview`` format (native order, read on
#: little-endian machines only) and its polars type: what numpy's dtype gives.
_FORMATS = {"u8": ("B", pl.UInt8), "u32": ("I", pl.UInt32), "u64": ("Q", pl.UInt64), "i64": ("q", pl.Int64),
            "f64": ("d", pl.Float64), "bool": ("?", pl.Boolean)}
_ITEM_BYTES = {"u8": 1, "u32": 4, "u64": 8, "i64": 8, "f64": 8, "bool": 1}
_NODE_COLUMNS = ("node", "src", "dst", "src_node", "dst_node", "host")
_NO_PORT = 2**32 - 1  # the largest u32: the core's "every port" of a capture tap

#: Up to this many bytes of column data in all, a run's tables are decoded
#: through Python lists instead of numpy arrays (same polars columns, same
#: files): importing numpy costs about as much as listing a million values,
#: and a small run's tables hold a few thousand.
_LIST_DECODE_BYTES = 2 << 20

Values = Union[list[Any], "np.ndarray[Any, np.dtype[Any]]"]


#: Up to this many rows, a column of codes (or of values with -1 for "none") is
#: decoded in Python: each polars operation costs about a millisecond of set-up,
#: and most tables of a small run have a handful of rows. Larger columns are
#: decoded by polars.
_SMALL = 2048


def _labels(column: str, codes: Values, labels: Sequence[str]) -> pl.Series:
    """Replace integer ``codes`` (a list or a numpy array) by ``labels[code]``."""
    if len(codes):
        top = max(codes) if isinstance(codes, list) else int(codes.max())
        if top >= len(labels):
            raise ValueError(f"column {column!r}: code {top} has no label (only {len(labels)} labels)")
    if len(codes) <= _SMALL:
        listed = codes if isinstance(codes, list) else codes.tolist()
        return pl.Series(column, [labels[code] for code in listed], dtype=pl.String)
    return pl.Series(column, list(labels), dtype=pl.String).gather(codes)


def _values(name: str, column: str, dtype: str, data: bytes, as_list: bool) -> Values:
    """One column's values: a list (``as_list``) or a numpy array."""
    if dtype not in _DTYPES:
        raise ValueError(f"table {name!r}, column {column!r}: unknown dtype {dtype!r}")
    if len(data) % _ITEM_BYTES[dtype]:
        raise ValueError(f"table {name!r}, column {column!r}: {len(data)} bytes are no whole number of {dtype} values")
    if as_list:
        return memoryview(data).cast(_FORMATS[dtype][0]).tolist()
    import numpy as np

    return np.frombuffer(data, dtype=_DTYPES[dtype])


def _decode_table(
    name: str,
    columns: Mapping[str, tuple[str, bytes]],
    strings: Mapping[str, Sequence[str]],
    node_names: Sequence[str],
    as_list: bool = False,
) -> pl.DataFrame:
    """Build one table from ``{column: (dtype, little-endian bytes)}``.

    Columns with a dictionary in ``strings`` (key ``"table.column"``) and, outside
    the ``nodes`` table, node id columns are decoded to strings. ``as_list``
    reads the bytes through Python lists instead of numpy (the same columns).
    """
    series = []
    for column, (dtype, data) in columns.items():
        values = _values(name, column, dtype, data, as_list)
        dictionary = strings.get(f"{name}.{column}")
        if dictionary is not None:
            series.append(_labels(column, values, dictionary))
        elif name != NODES and column in _NODE_COLUMNS and node_names:
            series.append(_labels(column, values, node_names))
        elif isinstance(values, list):
            if dtype == "i64" and -1 in values:
                # The core marks "no value" in signed columns with -1 (e.g. the FCT
                # of a flow that did not complete): these become nulls.
                values = [None if v == -1 else v for v in values]
            series.append(pl.Series(column, values, dtype=_FORMATS[dtype][1]))
        elif dtype == "i64":
            if not (values == -1).any():
                series.append(pl.Series(column, values))
            elif values.size <= _SMALL:
                series.append(pl.Series(column, [None if v == -1 else v for v in values.tolist()], dtype=pl.Int64))
            else:
                series.append(pl.Series(column, values).replace(-1, None))
        else:
            series.append(pl.Series(column, values))
    frame = pl.DataFrame(series)
    if name == "capture_taps" and {"port", "direction"} <= set(frame.columns):
        # The core's sentinels as a reader expects them: no port (every port) and the direction by name.
        frame = frame.with_columns(
            pl.when(pl.col("port") == _NO_PORT).then(None).otherwise(pl.col("port")).alias("port"),
            pl.col("direction").replace_strict(_TAP_DIRECTIONS, return_dtype=pl.String).alias("direction"),
        )
    return frame


#: ``capture_taps.direction`` codes of the core.
_TAP_DIRECTIONS = {0: "tx", 1: "rx", 2: "both"}


def _with_names(nodes: pl.DataFrame, node_names: Sequence[str]) -> pl.DataFrame:
    """Add a ``name`` column after ``id``, and ``id`` (the row number) if missing."""
    if "name" in nodes.columns or not node_names:
        return nodes
    if not nodes.width:
        nodes = pl.DataFrame([pl.Series("id", range(len(node_names)), dtype=pl.UInt32)])
    elif "id" not in nodes.columns:
        nodes = nodes.insert_column(0, pl.Series("id", range(nodes.height), dtype=pl.UInt32))
    names = _labels("name", nodes["id"].to_list(), node_names)
    return nodes.insert_column(nodes.columns.index("id") + 1, names)


def decode(raw: Mapping[str, Any]) -> tuple[dict[str, Any], pl.DataFrame, dict[str, pl.DataFrame]]:
    """``(summary, nodes, tables)`` from the dict returned by ``fabricsim._core.Simulation.finish()``.

    Expected keys: ``summary`` (dict), ``tables`` (``{table: {column: (dtype,
    bytes)}}``), ``node_names`` (names indexed by node id) and optionally
    ``strings`` (``{"table.column": [labels]}`` for columns holding codes).
    ``tables`` holds every table but ``nodes``, the :data:`CORE_TABLES` first
    (empty when missing), then the others in the core's order.
    """
    raw_tables = raw.get("tables", {})
    strings = raw.get("strings", {})
    node_names = list(raw.get("node_names", []))
    size = sum(len(data) for columns in raw_tables.values() for _, data in columns.values())
    as_list = sys.byteorder == "little" and size <= _LIST_DECODE_BYTES

    def table(name: str) -> pl.DataFrame:
        return _decode_table(name, raw_tables.get(name, {}), strings, node_names, as_list)

    nodes = _with_names(table(NODES), node_names)
    names = [*CORE_TABLES, *(name for name in raw_tables if name not in CORE_TABLES and name != NODES)]
    return dict(raw.get("summary", {})), nodes, {name: table(name) for name in names}


def read_tables(directory: str | os.PathLike[str]) -> dict[str, pl.DataFrame]:
    """Every ``<name>.parquet`` of a run directory by name: :data:`CORE_TABLES`
    first (empty when the file is missing), then the others by name."""
    folder = Path(directory)
    found = sorted(path.stem for path in folder.glob("*.parquet") if path.is_file())
    names = [*CORE_TABLES, *(name for name in found if name not in CORE_TABLES)]
    return {
        name: pl.read_parquet(folder / f"{name}.parquet") if name in found else pl.DataFrame() for name in names
    }


class _Table:
    """``run.<name>``: the table of that name (an empty frame when the run has none)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, run: Optional[RunTables], owner: Optional[type] = None) -> Any:
        if run is None:
            return self
        frame = run._tables.get(self.name)
        return frame if frame is not None else pl.DataFrame()

    def __set__(self, run: RunTables, frame: pl.DataFrame) -> None:
        run._tables[self.name] = frame


class RunTables:
    """The summary, scenario and tables of one run.

    Attributes:
        summary: run-level figures from the core, plus ``scenario`` and ``seed``
            (and ``interrupted`` or ``error`` when the run stopped early).
        timing: what depends on the machine: ``wall_time_s`` and
            ``events_per_sec`` (written apart, to ``timing.json``).
        nodes: ``id``, ``name``, ``kind`` and any other per-node columns.
        flows, queues, drops, links, throughput: the core's tables, node ids
            replaced by node names and coded string columns decoded.
        marks, pools, buffers, queue_peaks: ECN marks, sampled pool occupancy,
            buffer and queue high-water marks; pauses: PFC pause frames and
            paused time per (node, port, priority).
        power, energy: device power per time bin and energy per device over
            the run (devices with a ``power`` model; ``docs/models/power.md``).
        multicast, multicast_members, multicast_tree: per multicast source,
            per (source, member), and the distribution trees
            (``docs/models/multicast.md``).
        fabric_receivers: per adapter of a broadcast fabric, frames seen,
            kept and filtered (``docs/models/broadcast-fabric.md``).
        fct: FCT statistics per size bucket (:mod:`fabricsim.outputs.fct`);
            empty without TCP flows.
        pipeline, pipes, pipeline_queues: match-action pipelines' per-stage
            counters (long format), per-pipe statistics and sampled waiting
            queues; arbitration, fairness: per-input shares of switch egress
            ports with input arbitration and their min/max/Jain's index
            (empty when the run has none).
        source_shares: each source host's share of what a host received
            from two or more sources, with min/max/Jain per receiver
            (:mod:`fabricsim.outputs.shares`).
        collectives: per collective traffic entry and iteration, its time,
            algorithm and bus bandwidth (:mod:`fabricsim.workloads.collectives`).
        scenario: the scenario that was run (seed included), when known.
    """

    flows = _Table()
    queues = _Table()
    drops = _Table()
    links = _Table()
    throughput = _Table()
    marks = _Table()
    pools = _Table()
    buffers = _Table()
    queue_peaks = _Table()
    pauses = _Table()
    pipeline = _Table()
    pipes = _Table()
    pipeline_queues = _Table()
    arbitration = _Table()
    fairness = _Table()
    power = _Table()
    energy = _Table()
    multicast = _Table()
    multicast_members = _Table()
    multicast_tree = _Table()
    fabric_receivers = _Table()
    fct = _Table()
    source_shares = _Table()
    collectives = _Table()
    cpu = _Table()
    cores = _Table()
    host_stages = _Table()
    host_latency = _Table()
    packet_latency = _Table()
    iperf3 = _Table()
    ping_pong = _Table()

    def __init__(
        self,
        summary: dict[str, Any],
        *,
        nodes: Optional[pl.DataFrame] = None,
        tables: Optional[Mapping[str, pl.DataFrame]] = None,
        scenario: Optional[Scenario] = None,
        timing: Optional[dict[str, Any]] = None,
        **frames: Optional[pl.DataFrame],
    ) -> None:
        """``tables`` (and ``frames``, keyword by keyword) by name; :data:`CORE_TABLES` not given are empty."""
        self.summary = summary
        self.nodes = nodes if nodes is not None else pl.DataFrame()
        self._tables: dict[str, pl.DataFrame] = {name: pl.DataFrame() for name in CORE_TABLES}
        given = {**(tables or {}), **{name: frame for name, frame in frames.items() if frame is not None}}
        self._tables.update(given)
        self.scenario = scenario
        self.timing: dict[str, Any] = dict(timing or {})

    def __getattr__(self, name: str) -> pl.DataFrame:
        """A table without an attribute of its own (one the core added), by name."""
        tables = self.__dict__.get("_tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute or table {name!r}")

    def memo(self, key: str, inputs: tuple[Any, ...], compute: Callable[[], Any], settings: Any = None) -> Any:
        """``compute()``, kept on this run under ``key`` (the last one only) for
        as long as the tables it reads (``inputs``) are the same objects and
        ``settings`` compare equal: derived tables that several sections of the
        report, or the report and the summary, ask for."""
        cached = self.__dict__.get(key)
        if (
            cached is not None
            and len(cached[0]) == len(inputs)
            and all(a is b for a, b in zip(cached[0], inputs))
            and cached[1] == settings
        ):
            return cached[2]
        value = compute()
        self.__dict__[key] = (inputs, settings, value)
        return value

    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table written to a file, by name (``<name>.parquet``): ``nodes``
        first (when known), the core's, then the derived ones that are not empty
        (``fct`` only when the run has TCP flows)."""
        out = {NODES: self.nodes} if self.nodes.width else {}
        out.update((name, frame) for name, frame in self._tables.items() if name not in DERIVED_TABLES)
        for name in DERIVED_TABLES:
            frame = self._tables.get(name)
            if frame is not None and frame.height:
                out[name] = frame
        return out

    def __repr__(self) -> str:
        shapes = ", ".join(f"{name}={frame.height} rows" for name, frame in self.tables().items())
        return f"{type(self).__name__}(summary={len(self.summary)} entries, {shapes})"
