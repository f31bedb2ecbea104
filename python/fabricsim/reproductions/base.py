"""What a reproduction is: a published benchmark report's tests, each a list of
points (plain parameter dicts) and a function that runs one point and returns
rows of named tables.

A reproduction never reaches into the core: every point builds an ordinary
scenario (from the YAML files in ``reproductions/data/<report>/``, which a user
can copy and edit) and runs it, or calls one of the experiments in
:mod:`fabricsim.experiments` that do so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import yaml

from fabricsim.errors import FabricsimError

__all__ = ["Assumption", "ReproduceError", "Report", "Test", "assume", "data_dir", "grid_points", "load_yaml",
           "sweep_definition"]

class ReproduceError(FabricsimError):
    """A reproduction cannot be run as asked (unknown report or test, bad backend)."""


Rows = dict[str, list[dict[str, Any]]]


@dataclass(frozen=True)
class Test:
    """One test of a report.

    ``points(full)`` lists the parameter dicts of the test at the default scale
    (``full=False``) or at the report's own scale; ``run(params, full)`` runs one
    point and returns ``{table name: rows}``; ``seconds`` estimates one point's
    wall time at the default scale on one core of a 2-core machine;
    ``scenarios`` names the files of ``data/<report>/`` that its points read
    (they key its points, so an edit reruns them; none named: every scenario
    file of the report).
    """

    name: str
    title: str
    points: Callable[[bool], list[dict[str, Any]]]
    run: Callable[[dict[str, Any], bool], Rows]
    seconds: float = 1.0
    scenarios: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assumption:
    """A documented space of settings that the public-facts models do not take,
    searched to *explain* a claim they miss, never to predict it.

    ``test``: the test whose points are rerun; ``only``: the points (by their
    parameters) it changes, which are also the rows of that test's tables that
    its runs replace (by the columns of the same names); ``space``: the settings
    in the order they are tried, from the nearest to the models outward, each a
    sentence for the page ("the competitor's pipeline forwards 850 Mpps per pipe")
    and the scenario settings it makes (dotted paths, applied by :func:`assume`).
    """

    name: str
    test: str
    only: dict[str, Any]
    space: tuple[tuple[str, dict[str, Any]], ...]
    why: str = ""


def assume(doc: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the settings of the point's assumption (``params["assume"]``, dotted
    paths such as ``network.switch.pipeline.rate``) set; unchanged without one. A preset
    named by a string on the way (``model: linux-kernel``) becomes ``{preset: ...}``."""
    for path, value in (params.get("assume") or {}).items():
        node = doc
        keys = path.split(".")
        for key in keys[:-1]:
            child = node.get(key)
            if isinstance(child, str):
                child = {"preset": child}
            elif not isinstance(child, dict):
                child = {}
            node[key] = child = dict(child)
            node = child
        node[keys[-1]] = value
    return doc


@dataclass(frozen=True)
class Report:
    """A benchmark report to reproduce: its tests, the devices it compares, and its page."""

    name: str
    title: str
    summary: str
    devices: tuple[str, ...]
    tests: tuple[Test, ...]
    #: ``render(tables, full) -> HTML body`` of the page (tables: ``{"<test>/<table>": DataFrame}``).
    render: Callable[[dict[str, Any], bool], str]
    #: Reductions of the default scale against the report, stated on the page.
    reductions: tuple[str, ...] = ()
    #: Golden-snapshot tests: the cheapest ones, run by the test suite.
    golden_tests: tuple[str, ...] = field(default_factory=tuple)
    #: ``golden_select(test, params)``: the default-scale points of the golden tests
    #: that the snapshot holds (all of them when None).
    golden_select: Optional[Callable[[str, dict[str, Any]], bool]] = None
    #: Every claim id of ``data/<name>/claims.yaml`` -> an extractor of its simulated value
    #: from the tables, or the reason the simulation cannot produce it (see :mod:`.claims`).
    claims: Mapping[str, Any] = field(default_factory=dict)
    #: The assumptions searched to explain the claims the models miss (see :class:`Assumption`).
    assumptions: tuple[Assumption, ...] = ()
    #: Claim id -> the experiment or argument that rules the models out for a claim they
    #: miss (shown beside the miss, counted apart; :func:`.claims.rule_out`).
    ruled_out: Mapping[str, str] = field(default_factory=dict)

    def test(self, name: str) -> Test:
        for t in self.tests:
            if t.name == name:
                return t
        raise KeyError(name)

    def estimate_s(self, full: bool = False, tests: Optional[list[str]] = None, workers: int = 2) -> float:
        """Rough wall time of the default scale (``full`` is not estimated: it is the report's own scale)."""
        chosen = [t for t in self.tests if tests is None or t.name in tests]
        return sum(len(t.points(full)) * t.seconds for t in chosen) / max(1, workers)


def data_dir(report: str) -> Path:
    """The package folder of a report's scenario files and sweep definition."""
    return Path(str(resources.files("fabricsim.reproductions") / "data" / report))


def load_yaml(report: str, name: str) -> dict[str, Any]:
    """A scenario file of a report as a plain dict (to be edited per point, then validated)."""
    return yaml.safe_load((data_dir(report) / name).read_text(encoding="utf-8"))


def sweep_definition(report: str) -> dict[str, Any]:
    """The report's ``sweep.yaml``: per test, the axes at the default and at the full scale."""
    return yaml.safe_load((data_dir(report) / "sweep.yaml").read_text(encoding="utf-8"))


def grid_points(report: str, test: str) -> Callable[[bool], list[dict[str, Any]]]:
    """Points of ``test`` from the report's ``sweep.yaml``: every combination of the
    axes of the chosen scale (``default`` or ``full``), each with the scale's fixed
    ``settings`` merged in (axes vary fastest last, in file order)."""
    import itertools

    def points(full: bool) -> list[dict[str, Any]]:
        spec = sweep_definition(report)["tests"][test]["full" if full else "default"]
        axes = spec.get("axes") or {}
        settings = spec.get("settings") or {}
        names = list(axes)
        out = []
        for values in itertools.product(*(axes[n] for n in names)):
            out.append({**settings, **dict(zip(names, values))})
        return out

    return points
