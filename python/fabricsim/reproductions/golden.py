"""Golden snapshots of reproductions: the default-scale tables of each report's
cheapest tests (``Report.golden_tests``, or the points of them that
``Report.golden_select`` keeps) as readable text in
``tests/golden/reproduce/<report>.txt``, compared with stated tolerances.

``fabricsim reproduce NAME --update-golden`` (or :func:`update`) rewrites the file.
A snapshot holds one CSV block per table, headed ``## <test>/<table>``; numbers
are compared with a relative tolerance of :data:`RTOL` (and an absolute one of
:data:`ATOL` near zero), everything else exactly.
"""

from __future__ import annotations

import io
import math
import tempfile
from pathlib import Path
from typing import Any, Optional

import polars as pl

__all__ = ["ATOL", "RTOL", "compare", "golden_path", "snapshot", "update"]

RTOL = 1e-6
ATOL = 1e-9
#: A source checkout holding this package (editable installs), else the current directory.
ROOT = Path(__file__).resolve().parents[3]


def golden_path(name: str) -> Path:
    """``tests/golden/reproduce/NAME.txt`` of the source checkout: the one this
    package lives in, else the current directory (an installed package run from
    the repository root, as the tests are)."""
    for root in (ROOT, Path.cwd()):
        if (root / "tests" / "golden").is_dir():
            return root / "tests" / "golden" / "reproduce" / f"{name}.txt"
    from fabricsim.reproductions.base import ReproduceError

    raise ReproduceError("golden snapshots live in a source checkout: run from its root (tests/golden/reproduce)")


def tables(name: str, workers: Optional[int] = 1) -> dict[str, pl.DataFrame]:
    """The golden tests' tables at the default scale (run afresh in a temporary folder)."""
    from fabricsim.reproductions.registry import get
    from fabricsim.reproductions.job import run_reproduction

    report = get(name)
    if not report.golden_tests:
        from fabricsim.reproductions.base import ReproduceError

        raise ReproduceError(f"{name} has no golden tests (its cheapest test is too slow for the test suite)")
    with tempfile.TemporaryDirectory() as tmp:
        out = run_reproduction(name, tmp, tests=list(report.golden_tests), workers=workers, page=False,
                               select=report.golden_select)
        if out.failed:
            raise RuntimeError("; ".join(out.errors))
        return dict(out.tables)


def snapshot(name: str, found: dict[str, pl.DataFrame]) -> str:
    lines = [f"# fabricsim reproduce {name}: golden tables at the default scale",
             f"# numbers compared with relative tolerance {RTOL:g} (absolute {ATOL:g}); refresh with",
             f"#   fabricsim reproduce {name} --update-golden", ""]
    for key in sorted(found):
        lines.append(f"## {key}")
        lines.append(found[key].write_csv(float_precision=None).rstrip("\n"))
        lines.append("")
    return "\n".join(lines)


def parse(text: str) -> dict[str, pl.DataFrame]:
    blocks: dict[str, list[str]] = {}
    current: Optional[str] = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            blocks[current] = []
        elif current is not None and line.strip() and not line.startswith("#"):
            blocks[current].append(line)
    return {k: pl.read_csv(io.StringIO("\n".join(v)), infer_schema_length=None) for k, v in blocks.items()}


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if math.isnan(float(a)) and math.isnan(float(b)):
            return True
        return math.isclose(float(a), float(b), rel_tol=RTOL, abs_tol=ATOL)
    return str(a) == str(b)


def compare(expected_text: str, found: dict[str, pl.DataFrame]) -> list[str]:
    """Differences between a snapshot and tables (empty when they agree within tolerance)."""
    expected = parse(expected_text)
    actual = parse(snapshot("x", found))  # the same text round trip, so types match
    problems = []
    for key in sorted(set(expected) | set(actual)):
        if key not in actual or key not in expected:
            problems.append(f"{key}: table {'missing' if key not in actual else 'not in the snapshot'}")
            continue
        e, a = expected[key], actual[key]
        if e.columns != a.columns or e.height != a.height:
            problems.append(f"{key}: columns/rows {e.columns}x{e.height} != {a.columns}x{a.height}")
            continue
        for col in e.columns:
            for i, (x, y) in enumerate(zip(e[col].to_list(), a[col].to_list())):
                if not _close(x, y):
                    problems.append(f"{key} row {i} {col}: snapshot {x!r}, now {y!r}")
    return problems


def update(name: str) -> list[Path]:
    path = golden_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(snapshot(name, tables(name)), encoding="utf-8")
    return [path]
