"""Running a scenario on the compiled simulation core."""

from __future__ import annotations

import importlib
import json
import os
import re
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from fabricsim import gcpause, machine_memory, units
from fabricsim.errors import FabricsimError, RunInterrupted, ScenarioError, SimulationError
from fabricsim.schema import Scenario, load

if TYPE_CHECKING:  # the results (polars, numpy) are imported once the core has run
    from fabricsim.outputs.results import Result

__all__ = ["check", "run"]

_STEPS = 200  # progress updates over the scenario duration
_BUSY_STEPS = 10  # a chunk while the report's preload runs, in progress steps
_UNTIL_THE_END = 2**64 - 1  # the core's last instant: run_until it runs to completion (drain included)
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


def _resolved_json(scenario: Scenario, resolved: dict[str, Any] | None = None) -> str:
    """The resolved scenario (``resolved``, when the caller has it already) as
    JSON text (finite numbers only)."""
    try:
        return json.dumps(scenario.to_resolved() if resolved is None else resolved, allow_nan=False)
    except ValueError as exc:  # a NaN or infinity slipped past the schema
        raise ScenarioError([("", f"cannot resolve the scenario: {exc}")], scenario.source) from None


def _build(core: ModuleType, scenario: Scenario, resolved: str) -> Any:
    """The core's simulation of ``scenario`` (``resolved``: its resolved JSON,
    :func:`_resolved_json`): the world built, nothing run yet."""
    try:
        try:
            # the core parses the document once, and refuses before building what would not fit
            return core.Simulation(resolved, machine_memory.available_bytes())
        except core.WorldTooLarge as exc:
            _refuse_memory(core, scenario, resolved, int(exc.args[0]))
            return core.Simulation(resolved)  # the memory came free in between
    except core.ConfigError as exc:
        raise _config_error(exc, scenario) from None


def _refuse_memory(core: ModuleType, scenario: Scenario, resolved: str, estimate: int) -> None:
    """Refuses a world whose estimated memory (the core's ``estimate_memory``:
    ``estimate`` bytes) is more than this process may still take
    (:mod:`fabricsim.machine_memory`), naming the traffic entry with the most
    flows when the flows take most of it, else ``topology``."""
    short = machine_memory.shortfall(estimate)
    if short is None:
        return
    document = json.loads(resolved)
    traffic = document.get("traffic") or []
    field, what = "topology", "fewer hosts, ports or classes"
    if traffic:
        without = core.estimate_memory(json.dumps({**document, "traffic": []}))
        if estimate - without > estimate / 2:
            index = max(range(len(traffic)), key=lambda i: len(traffic[i].get("flows") or ()))
            listed = len(traffic[index].get("flows") or ())
            field, what = ((f"traffic[{index}]", f"fewer than its {listed:,} flows") if listed
                           else ("traffic", f"fewer than its {len(traffic):,} entries"))
    raise ScenarioError([(field, f"before the first event the world would take {short} ({what})")], scenario.source)


def _preload(progress: bool) -> Any:
    """:class:`~fabricsim.outputs.preload.Preload` of the report's modules,
    started: the core releases the GIL while it builds and runs, so they are
    imported beside it. The progress bar's modules are imported first, here,
    so that this thread imports nothing while the preload runs (rich imports
    its emoji table on the bar's first drawing)."""
    if progress:
        import rich._emoji_codes  # noqa: F401
        import rich.progress  # noqa: F401

    from fabricsim.outputs.preload import Preload

    return Preload()


def check(scenario: Scenario | str | os.PathLike[str]) -> dict[str, Any]:
    """Validate ``scenario`` as :func:`run` does, without running it: the schema,
    then the core builds the world (hosts, routes, buffers, traffic) and
    applies its own checks. Returns the resolved scenario (``docs/contract.md``).

    Raises :class:`ScenarioError` naming the field for any problem.
    """
    if not isinstance(scenario, Scenario):
        scenario = load(scenario)
    resolved = scenario.to_resolved()  # once: a workload's expansion is most of it
    _build(_core(), scenario, _resolved_json(scenario, resolved))
    return resolved


def _advance(sim: Any, on_step: Callable[[], None] | None, busy: Callable[[], bool] = lambda: False) -> None:
    """Run ``sim`` to completion in chunks of simulated time, calling ``on_step`` in between.

    Without ``on_step`` the run is one call: nothing in Python needs the GIL
    in between, and a thread that holds it (the report's preload) would make
    every chunk wait for it. The core still hands control back every million
    events or so to look for signals, so Ctrl-C is seen within a fraction of a
    second either way. While ``busy()`` (the report's preload is importing,
    and holds the GIL at times) the chunks are ten times longer: each return
    may wait up to Python's switch interval for the GIL.
    """
    if on_step is None:
        while not sim.run_until(_UNTIL_THE_END):
            pass
        return
    step = max(sim.end_ps // _STEPS, 1)
    target = 0
    while True:
        target = max(target, sim.now_ps) + (step * _BUSY_STEPS if busy() else step)
        if sim.run_until(target):
            return
        on_step()


def _run_with_progress(sim: Any, label: str, busy: Callable[[], bool] = lambda: False) -> None:
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

        _advance(sim, update, busy)
        update()


def _partial(sim: Any, scenario: Scenario, started: float, note: dict[str, Any]) -> Result | None:
    """The results of a run that stopped early (``note`` goes into the summary),
    or ``None`` when the core's state is gone."""
    try:
        sim.stop()
        raw = sim.finish()
    except Exception:  # the core failed internally: nothing left to report
        return None
    return _result(raw, sim, scenario, started, note)


def _result(
    raw: Any, sim: Any, scenario: Scenario, started: float, note: dict[str, Any], ended: float | None = None
) -> Result:
    """The run's :class:`Result`; its timing is the core's: the world's build,
    the run and ``finish()``, from ``started`` to ``ended`` (now when not
    given), without the report's preload or the results' imports."""
    wall_time = (time.perf_counter() if ended is None else ended) - started
    Result = gcpause.import_module("fabricsim.outputs.results").Result  # polars and the results' modules

    result = Result.from_core(raw, scenario)
    summary = result.summary
    summary.setdefault("scenario", scenario.name)
    summary.setdefault("seed", scenario.seed)
    summary.update(note)
    events = summary.get("events", sim.events)
    result.timing = {"wall_time_s": wall_time, "events_per_sec": events / wall_time if wall_time > 0 else 0.0}
    return result


def run(
    scenario: Scenario | str | os.PathLike[str],
    seed: int | None = None,
    progress: bool = False,
    prepare_report: bool = False,
) -> Result:
    """Simulate ``scenario`` (a :class:`Scenario` or the path of a YAML file).

    ``seed`` replaces the scenario's seed. With ``progress`` a progress bar
    over simulated time is shown on stderr. The returned summary always has
    ``scenario`` and ``seed``; the machine-dependent figures (``wall_time_s``,
    ``events_per_sec``) are in ``result.timing``.

    ``prepare_report`` is for a caller that will write the HTML report
    (``fabricsim run`` without ``--no-report``): while the core builds the
    world and runs, a background thread imports what the report needs
    (:mod:`fabricsim.outputs.preload`: matplotlib, the report's modules), and
    the run returns once that thread has finished. The results are the same
    either way.

    Raises :class:`ScenarioError` when the core rejects the scenario (unknown
    node, disconnected topology, ...), :class:`~fabricsim.errors.SimulationError`
    when the run cannot go on (its ``result`` holds what was computed), and
    :class:`~fabricsim.errors.RunInterrupted` (a ``KeyboardInterrupt``, with the
    results so far) on Ctrl-C.
    """
    if not isinstance(scenario, Scenario):
        scenario = load(scenario)
    if seed is not None:
        scenario = scenario.with_seed(seed)
    core = _core()
    started = time.perf_counter()
    resolved = _resolved_json(scenario)
    preload = _preload(progress) if prepare_report else None
    stopped: dict[str, Any] | None = None
    try:
        sim = _build(core, scenario, resolved)
        try:
            if progress:
                _run_with_progress(sim, scenario.name, preload.alive if preload is not None else lambda: False)
            else:
                _advance(sim, None)
            raw = sim.finish()
            ended = time.perf_counter()
        except KeyboardInterrupt:
            stopped = {"interrupted": True}
        except core.SimulationError as exc:
            stopped = {"error": str(exc)}
    finally:
        if preload is not None:
            preload.wait()  # before this thread imports anything: the results' modules are among the preloaded
    if stopped is not None:
        partial = _partial(sim, scenario, started, stopped)
        if "error" in stopped:
            raise SimulationError(stopped["error"], partial)
        raise RunInterrupted(partial)
    return _result(raw, sim, scenario, started, {}, ended)
