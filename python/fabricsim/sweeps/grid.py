"""The grid of a sweep: ``--grid`` specs, seeds of repeats, and the points (parameters x seed) to run."""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fabricsim.errors import FabricsimError

__all__ = ["Point", "SweepError", "derive_seed", "parse_grid", "plan_points"]

_SEED_SALT = 0x53574545  # "SWEE"


class SweepError(FabricsimError):
    """A sweep that cannot start (bad grid, missing backend)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def parse_grid(specs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``["path=v1,v2", ...]`` -> ``[(path, [v1, v2]), ...]`` (values kept as text, parsed like ``--set``)."""
    grid: list[tuple[str, list[str]]] = []
    for spec in specs:
        path, sep, values = spec.partition("=")
        path = path.strip()
        items = [v.strip() for v in values.split(",")] if sep else []
        if not path or not items or any(not v for v in items):
            raise SweepError(f"--grid {spec!r}: expected PATH=V1,V2,... with non-empty values")
        if any(path == p for p, _ in grid):
            raise SweepError(f"--grid {path}: given twice")
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
    """One run of a sweep."""

    params: dict[str, str]
    repeat: int
    seed: int

    @property
    def id(self) -> str:
        text = json.dumps({"params": self.params, "seed": self.seed}, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    @property
    def overrides(self) -> list[str]:
        return [f"{path}={value}" for path, value in self.params.items()]


def plan_points(grid: Sequence[tuple[str, Sequence[str]]], repeats: int, base_seed: int) -> list[Point]:
    """Every combination of the grid values, times ``repeats`` seeds (same seeds for every combination)."""
    if repeats < 1:
        raise SweepError("--repeats must be >= 1")
    paths = [p for p, _ in grid]
    points = []
    for combo in itertools.product(*[values for _, values in grid]):
        for repeat in range(repeats):
            points.append(Point(dict(zip(paths, combo)), repeat, derive_seed(base_seed, repeat)))
    return points
