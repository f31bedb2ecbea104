"""``tcp_flows`` from a file: a table of flows (Parquet, or CSV with a header)
read with polars, for flow lists too long for YAML (a million flows in a few
seconds, where YAML takes minutes and gigabytes).

Columns: ``src`` and ``dst`` (host names), ``size`` (bytes: an integer, or a
size with a unit such as ``"64KB"``) and, optional, ``start`` (an integer in
picoseconds, or a time with a unit such as ``"10us"``; 0 when the column is
absent). Other columns are refused by name, so that a misspelt column is not
silently ignored; dependencies (``after``, ``compute``) are given in a YAML
``flows`` list. A relative path is read from the scenario file's folder (the
working directory for a scenario given as text)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Optional

from fabricsim import units
from fabricsim.errors import ScenarioError

__all__ = ["COLUMNS", "read_flows"]

COLUMNS = ("src", "dst", "size", "start")
MAX_SIZE = 2**53


def _path(name: str, scenario_source: Optional[str]) -> Path:
    path = Path(os.path.expanduser(name))
    if not path.is_absolute() and scenario_source:
        path = Path(scenario_source).parent / path
    return path


def _column(frame: Any, name: str, parse: Callable[[Any], int], what: str, field: str, source: Optional[str]) -> list[int]:
    """Column ``name`` as integers: integers as they are, strings through
    ``parse`` (each distinct value once); errors name the first bad row."""
    import polars as pl

    col = frame[name]
    if col.dtype.is_integer():
        if col.null_count():
            row = col.is_null().arg_max()
            raise ScenarioError([(f"{field}[{row}].{name}", f"{what} is missing")], source)
        if col.min() < 0:
            row = (col < 0).arg_max()
            raise ScenarioError([(f"{field}[{row}].{name}", f"must be >= 0 (got {col[row]})")], source)
        return col.cast(pl.Int64).to_list()
    if col.dtype != pl.String:
        raise ScenarioError([(f"{field}", f"column {name!r} must hold integers or strings with a unit "
                                          f"(got {col.dtype})")], source)
    parsed: dict[str, int] = {}
    for value in col.unique().to_list():
        if value is None:
            row = col.is_null().arg_max()
            raise ScenarioError([(f"{field}[{row}].{name}", f"{what} is missing")], source)
        try:
            parsed[value] = parse(value)
        except ValueError as exc:
            row = (col == value).arg_max()
            raise ScenarioError([(f"{field}[{row}].{name}", f"{exc} (got {value!r})")], source) from None
    return col.replace_strict(parsed, return_dtype=pl.Int64).to_list()


def read_flows(name: str, field: str, scenario_source: Optional[str]) -> list[dict[str, Any]]:
    """The resolved flows of flow file ``name`` (``src``, ``dst``, ``bytes``,
    ``start_ps``); ``field`` (``traffic[i].flows_file``) names it in errors."""
    import polars as pl

    path = _path(name, scenario_source)
    source = scenario_source
    try:
        if path.suffix.lower() == ".parquet":
            frame = pl.read_parquet(path)
        elif path.suffix.lower() == ".csv":
            frame = pl.read_csv(path, infer_schema_length=10_000)
        else:
            raise ScenarioError([(field, f"{name}: a .parquet or .csv file is expected")], source)
    except FileNotFoundError:
        raise ScenarioError([(field, f"{path}: file not found")], source) from None
    except ScenarioError:
        raise
    except Exception as exc:  # polars' read errors: a damaged or non-tabular file
        raise ScenarioError([(field, f"{path}: cannot read it as a table: {str(exc).splitlines()[0]}")],
                            source) from None
    unknown = [c for c in frame.columns if c not in COLUMNS]
    if unknown:
        raise ScenarioError([(field, f"{path}: unknown column {unknown[0]!r}; allowed: {', '.join(COLUMNS)} "
                                     "(dependencies go in a YAML `flows` list)")], source)
    missing = [c for c in ("src", "dst", "size") if c not in frame.columns]
    if missing:
        raise ScenarioError([(field, f"{path}: missing column {missing[0]!r} (columns: src, dst, size, start)")],
                            source)
    if frame.height == 0:
        raise ScenarioError([(field, f"{path}: holds no flow")], source)
    rows = f"{field.rsplit('.', 1)[0]}.flows"
    for col in ("src", "dst"):
        if frame[col].dtype != pl.String or frame[col].null_count():
            raise ScenarioError([(field, f"{path}: column {col!r} must name a host on every row")], source)
    sizes = _column(frame, "size", units.parse_size, "the size", rows, source)
    if max(sizes) > MAX_SIZE or min(sizes) < 1:
        bad = next(i for i, s in enumerate(sizes) if not 1 <= s <= MAX_SIZE)
        raise ScenarioError([(f"{rows}[{bad}].size", f"must be 1 B to 2^53 B (got {sizes[bad]})")], source)
    starts = _column(frame, "start", units.parse_time, "the start", rows, source) if "start" in frame.columns \
        else [0] * frame.height
    return [{"src": s, "dst": d, "bytes": b, "start_ps": t}
            for s, d, b, t in zip(frame["src"].to_list(), frame["dst"].to_list(), sizes, starts)]
