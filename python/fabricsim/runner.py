"""Running a scenario on the compiled simulation core."""

from __future__ import annotations

import importlib
import json
import os
import re
import time
from types import ModuleType
from typing import Any, Callable

from fabricsim import units
from fabricsim.errors import FabricsimError, ScenarioError
from fabricsim.outputs.results import Result
from fabricsim.schema import Scenario, load

__all__ = ["run"]

_STEPS = 200  # progress updates over the scenario duration
_FIELD_PATH = re.compile(r"^[A-Za-z_]\w*(?:\[\d+\]|\.\w+)*$")


def _core() -> ModuleType:
    """The compiled ``fabricsim._core`` module, imported on first use."""
    try:
        return importlib.import_module("fabricsim._core")
    except ImportError as exc:
        raise FabricsimError(
            f"the simulation core (fabricsim._core) is not available: {exc}; build it with 'maturin develop --release'"
        ) from None


def _config_error(exc: Exception, scenario: Scenario) -> ScenarioError:
    """Turn the core's ``ConfigError`` ("traffic[1].dst: unknown node ...") into a ScenarioError."""
    message = str(exc)
    path, sep, detail = message.partition(": ")
    if sep and _FIELD_PATH.match(path):
        return ScenarioError([(path, detail)], scenario.source)
    return ScenarioError([("", message)], scenario.source)


def _advance(sim: Any, on_step: Callable[[], None]) -> None:
    """Run ``sim`` to completion in chunks of simulated time, calling ``on_step`` in between.

    Chunking keeps the run interruptible (Ctrl-C is seen between chunks).
    """
    step = max(sim.end_ps // _STEPS, 1)
    target = 0
    while True:
        target = max(target, sim.now_ps) + step
        if sim.run_until(target):
            return
        on_step()


def _run_with_progress(sim: Any, label: str) -> None:
    """:func:`_advance` with a progress bar over simulated time on stderr."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[sim_time]}"),
        TextColumn("{task.fields[speed]}"),
        TimeElapsedColumn(),
    )
    label = escape(label)
    end = sim.end_ps
    started = time.perf_counter()
    with Progress(*columns, console=Console(stderr=True)) as progress:
        task = progress.add_task(label, total=end, sim_time="", speed="")

        def update() -> None:
            now = sim.now_ps
            elapsed = max(time.perf_counter() - started, 1e-9)
            progress.update(
                task,
                completed=min(now, end),
                description=label if now < end else f"{label} (draining)",
                sim_time=f"{units.format_time(now, 3)} / {units.format_time(end, 3)}",
                speed=f"{sim.events / elapsed:,.0f} events/s",
            )

        _advance(sim, update)
        update()


def run(
    scenario: Scenario | str | os.PathLike[str],
    seed: int | None = None,
    progress: bool = False,
) -> Result:
    """Simulate ``scenario`` (a :class:`Scenario` or the path of a YAML file).

    ``seed`` replaces the scenario's seed. With ``progress`` a progress bar
    over simulated time is shown on stderr. The returned summary always has
    ``scenario``, ``seed``, ``wall_time_s`` and ``events_per_sec``.

    Raises :class:`ScenarioError` when the core rejects the scenario (unknown
    node, disconnected topology, ...).
    """
    if not isinstance(scenario, Scenario):
        scenario = load(scenario)
    if seed is not None:
        scenario = scenario.with_seed(seed)
    core = _core()
    started = time.perf_counter()
    try:
        sim = core.Simulation(json.dumps(scenario.to_resolved()))
        if progress:
            _run_with_progress(sim, scenario.name)
        else:
            _advance(sim, lambda: None)
        raw = sim.finish()
    except core.ConfigError as exc:
        raise _config_error(exc, scenario) from None
    wall_time = time.perf_counter() - started

    result = Result.from_core(raw, scenario)
    summary = result.summary
    summary.setdefault("scenario", scenario.name)
    summary.setdefault("seed", scenario.seed)
    summary.setdefault("wall_time_s", wall_time)
    events = summary.get("events", sim.events)
    summary.setdefault("events_per_sec", events / wall_time if wall_time > 0 else 0.0)
    return result
