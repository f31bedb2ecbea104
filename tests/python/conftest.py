"""Shared fixtures.

Tests that need the compiled simulation core take the ``core`` fixture and are
skipped when it is not built; everything else runs on plain Python, using
``fake_core`` where a stand-in for the binding is needed.
"""

import json
import sys
from types import ModuleType
from typing import Any, Dict, Optional

import numpy as np
import pytest

_NUMPY = {"u8": "<u1", "u32": "<u4", "u64": "<u8", "i64": "<i8", "f64": "<f8", "bool": "?"}


def column(dtype: str, values: list) -> tuple:
    """A column as ``finish()`` returns it: (dtype, little-endian bytes)."""
    return dtype, np.asarray(values, dtype=_NUMPY[dtype]).tobytes()


@pytest.fixture
def core() -> ModuleType:
    """The compiled ``fabricsim._core`` module; skips the test when it is not built."""
    return pytest.importorskip("fabricsim._core", reason="the compiled core is not built")


@pytest.fixture
def core_output() -> Dict[str, Any]:
    """A small ``Simulation.finish()`` result in the binding's format."""
    return {
        "summary": {"events": 120, "packets_created": 10, "conservation_ok": True, "latency_mean_s": float("nan")},
        "node_names": ["sw0", "h0", "h1"],
        "tables": {
            "nodes": {
                "id": column("u32", [0, 1, 2]),
                "name": column("u32", [0, 1, 2]),
                "kind": column("u32", [1, 0, 0]),
            },
            "flows": {
                "name": column("u32", [0, 1]),
                "kind": column("u32", [0, 1]),
                "src": column("u32", [1, 2]),
                "dst": column("u32", [2, 1]),
                "class": column("u8", [0, 7]),
                "packets_sent": column("u64", [5, 5]),
                "fct_ps": column("i64", [-1, 1_000_000]),
                "completed": column("bool", [False, True]),
            },
            "queues": {
                "time_ps": column("u64", [0, 10, 20]),
                "node": column("u32", [0, 0, 0]),
                "port": column("u32", [1, 1, 1]),
                "bytes": column("u64", [0, 1500, 0]),
            },
            "drops": {
                "node": column("u32", [0]),
                "reason": column("u32", [0]),
                "packets": column("u64", [3]),
            },
            "links": {
                "src": column("u32", [1, 0]),
                "dst": column("u32", [0, 2]),
                "utilization": column("f64", [0.25, 0.5]),
            },
        },
        "strings": {
            "nodes.name": ["sw0", "h0", "h1"],
            "nodes.kind": ["host", "switch"],
            "flows.name": ["a", "b"],
            "flows.kind": ["udp_cbr", "burst"],
            "drops.reason": ["port_buffer_full"],
        },
    }


@pytest.fixture
def fake_core(monkeypatch: pytest.MonkeyPatch, core_output: Dict[str, Any]) -> ModuleType:
    """A pure-Python stand-in for ``fabricsim._core``, installed in ``sys.modules``.

    Its simulations advance to each ``run_until`` target, count 10 events per
    call and finish at ``end_ps``; a traffic destination ``h99`` raises
    ``ConfigError`` the way the core does. ``module.simulations`` lists them.
    """
    module = ModuleType("fabricsim._core")

    class ConfigError(ValueError):
        pass

    class SimulationError(RuntimeError):
        pass

    class WorldTooLarge(ValueError):
        pass

    class Simulation:
        def __init__(self, scenario_json: str, memory_limit: Optional[int] = None) -> None:
            if memory_limit is not None and memory_limit < module.estimate_memory(scenario_json):
                raise WorldTooLarge(module.estimate_memory(scenario_json))
            self.config = json.loads(scenario_json)
            for index, source in enumerate(self.config["traffic"]):
                if source["dst"] == "h99":
                    raise ConfigError(f"traffic[{index}].dst: unknown node 'h99' (hosts are h0..h1)")
            self.end_ps = self.config["duration_ps"]
            self.now_ps = 0
            self.events = 0
            self.targets = []
            module.simulations.append(self)

        def run_until(self, t_ps: int) -> bool:
            self.targets.append(t_ps)
            self.now_ps = min(t_ps, self.end_ps)
            self.events += 10
            return self.now_ps >= self.end_ps

        def finish(self) -> Dict[str, Any]:
            return core_output

    module.ConfigError = ConfigError
    module.SimulationError = SimulationError
    module.WorldTooLarge = WorldTooLarge
    module.Simulation = Simulation
    module.estimate_memory = lambda scenario_json: 1 << 20
    module.simulations = []
    monkeypatch.setitem(sys.modules, "fabricsim._core", module)
    return module


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/*.txt from this build instead of comparing (after an intended change of behaviour)",
    )
