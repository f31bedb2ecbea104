"""The grid of a sweep: ``--grid`` specs, seeds of repeats, and the points (parameters x seed) to run."""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fabricsim.errors import FabricsimError

__all__ = ["Point", "SweepError", "derive_seed", "parse_grid", "plan_points", "split_values"]

_SEED_SALT = 0x53574545  # "SWEE"


class SweepError(FabricsimError):
    """A sweep that cannot start (bad grid, missing backend)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def split_values(text: str) -> list[str]:
    """The values of ``--grid PATH=V1,V2,...``: split on the commas that are
    outside brackets, braces and quotes, so that a value may itself be a YAML
    list or mapping (``[1,2],[3,4]``, ``{a: 1, b: 2}``) or a quoted string
    with a comma. Values keep their text (parsed later like ``--set``)."""
    items: list[str] = []
    depth = 0
    quote = ""
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                if quote == "'" and text[i + 1 : i + 2] == "'":  # '' inside single quotes
                    i += 1
                else:
                    quote = ""
            elif ch == "\\" and quote == '"':
                i += 1
        elif ch in "'\"" and text[start:i].strip() == "":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced {ch!r} at position {i + 1}")
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
        i += 1
    if quote:
        raise ValueError(f"unterminated {quote} quote")
    if depth:
        raise ValueError("unbalanced brackets")
    items.append(text[start:].strip())
    return items


def parse_grid(specs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``["path=v1,v2", ...]`` -> ``[(path, [v1, v2]), ...]`` (values kept as
    text, parsed like ``--set``). Values are split by :func:`split_values`:
    ``drr_weights=[1,2],[3,4]`` has two values, each a list."""
    from fabricsim.schema import _yaml

    grid: list[tuple[str, list[str]]] = []
    for spec in specs:
        path, sep, values = spec.partition("=")
        path = path.strip()
        try:
            items = split_values(values) if sep else []
        except ValueError as exc:
            raise SweepError(f"--grid {spec!r}: {exc}") from None
        if not path or not items or any(not v for v in items):
            raise SweepError(f"--grid {spec!r}: expected PATH=V1,V2,... with non-empty values")
        for item in items:
            try:
                _yaml.parse_value(item)
            except Exception as exc:  # a YAML error: name the value
                problem = getattr(exc, "problem", None) or str(exc)
                raise SweepError(f"--grid {path}: the value {item!r} is not valid YAML: {problem}") from None
        if any(path == p for p, _ in grid):
            raise SweepError(f"--grid {path}: given twice")
        if len(set(items)) != len(items):
            raise SweepError(f"--grid {path}: a value is given twice")
        grid.append((path, items))
    return grid


def derive_seed(base: int, repeat: int) -> int:
    """Seed of repeat ``repeat`` (repeat 0 keeps ``base``; others are derived, < 2**63)."""
    if repeat == 0:
        return int(base)
    state = np.random.SeedSequence([int(base), _SEED_SALT, int(repeat)]).generate_state(2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


@dataclass(frozen=True)
class Point:
    """One run of a sweep: the grid values ``params``, the sweep's fixed
    ``--set`` overrides ``fixed`` (applied first), the repeat and its seed;
    ``scenario`` is a digest of the scenario file's contents ("" when unknown)."""

    params: dict[str, str]
    repeat: int
    seed: int
    fixed: tuple[str, ...] = ()
    scenario: str = ""

    @property
    def id(self) -> str:
        """Stable id of the point: its grid values, seed, fixed overrides and
        the scenario file's contents, so that a sweep rerun into the same
        directory after the file was edited reruns every point."""
        key: dict[str, object] = {"params": self.params, "seed": self.seed}
        if self.fixed:
            key["set"] = list(self.fixed)
        if self.scenario:
            key["scenario"] = self.scenario
        text = json.dumps(key, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    @property
    def overrides(self) -> list[str]:
        return [*self.fixed, *(f"{path}={value}" for path, value in self.params.items())]


def plan_points(
    grid: Sequence[tuple[str, Sequence[str]]],
    repeats: int,
    base_seed: int,
    fixed: Sequence[str] = (),
    scenario: str = "",
) -> list[Point]:
    """Every combination of the grid values, times ``repeats`` seeds (same seeds
    for every combination); ``fixed`` overrides apply to every point;
    ``scenario`` (a digest of the scenario file) goes into every point's id."""
    if repeats < 1:
        raise SweepError("--repeats must be >= 1")
    paths = [p for p, _ in grid]
    points = []
    for combo in itertools.product(*[values for _, values in grid]):
        for repeat in range(repeats):
            points.append(
                Point(dict(zip(paths, combo)), repeat, derive_seed(base_seed, repeat), tuple(fixed), scenario)
            )
    return points
