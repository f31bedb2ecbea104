"""Type stubs for the compiled simulation core (see docs/contract.md)."""

from typing import Any

class ConfigError(ValueError):
    """The resolved scenario is invalid; the message starts with the field path."""

class SimulationError(RuntimeError):
    """The run cannot go on: simulated time stopped advancing (the message names
    the component), or an internal failure of the core (a Rust panic is mapped here)."""

class WorldTooLarge(ValueError):
    """A world whose estimated bytes (``args[0]``) are more than the ``memory_limit`` it was built under."""

BUILD: str
"""How the core was compiled: "optimized", "optimized, profile-guided" (scripts/build-pgo.sh),
"instrumented for profiling (slow)" or "debug"."""

def fill_defaults(scenario_json: str) -> str:
    """The resolved scenario with the core's defaults filled in for every field it leaves out."""

def extensions() -> str:
    """JSON ``{"buffer": {name: {"summary", "schema"}}, "rate_cc": {...}}``: the buffer admission policies
    and RoCE rate controllers registered in this build of the core (docs/extending/)."""

def check_extension_params(kind: str, name: str, params_json: str, classes: int) -> None:
    """Check the parameters of registered model ``name`` (``kind``: "buffer" or "rate_cc") as its factory
    would; raises ConfigError "params.<field>: ..." (buffer) or "cc_params.<field>: ..." (rate_cc)."""

def estimate_memory(scenario_json: str) -> int:
    """Estimated bytes of the world before the first event; raises ConfigError where a limit is passed."""

def _panic_in_core(message: str) -> None:
    """Panic inside the binding's guard: raises SimulationError (tests only)."""

class Simulation:
    """A simulation built from a resolved scenario JSON document."""

    def __init__(self, scenario_json: str, memory_limit: int | None = None) -> None:
        """Parses and builds the scenario; with ``memory_limit`` (bytes), raises
        :class:`WorldTooLarge` before building a world estimated to be larger."""
    @property
    def now_ps(self) -> int:
        """Current simulated time in picoseconds."""
    @property
    def end_ps(self) -> int:
        """The scenario duration in picoseconds."""
    @property
    def events(self) -> int:
        """Events processed so far."""
    stall_limit: int
    """Events at one simulated time that fail the run with SimulationError."""
    def run_until(self, t_ps: int) -> bool:
        """Advance to simulated time ``t_ps`` (releases the GIL, handles signals every 2^20 events);
        True once the run has finished."""
    def stop(self) -> None:
        """End the run where it is: ``finish()`` then returns the results so far."""
    def memory(self) -> dict[str, int]:
        """Bytes held by the state: ``packets``, ``port_queues``, ``wires``, ``events``, ``routing``; ``peak_packets``."""
    def finish(self) -> dict[str, Any]:
        """Run to completion if needed; return ``summary``, ``tables``, ``node_names``, ``strings``."""
