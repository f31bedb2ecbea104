"""Type stubs for the compiled simulation core (see docs/contract.md)."""

from typing import Any

class ConfigError(ValueError):
    """The resolved scenario is invalid; the message starts with the field path."""

class SimulationError(RuntimeError):
    """Internal failure of the core (a Rust panic is mapped here)."""

class Simulation:
    """A simulation built from a resolved scenario JSON document."""

    def __init__(self, scenario_json: str) -> None: ...
    @property
    def now_ps(self) -> int:
        """Current simulated time in picoseconds."""
    @property
    def end_ps(self) -> int:
        """The scenario duration in picoseconds."""
    @property
    def events(self) -> int:
        """Events processed so far."""
    def run_until(self, t_ps: int) -> bool:
        """Advance to simulated time ``t_ps`` (releases the GIL); True once the run has finished."""
    def memory(self) -> dict[str, int]:
        """Bytes held by the state: ``packets``, ``port_queues``, ``wires``, ``events``, ``routing``; ``peak_packets``."""
    def finish(self) -> dict[str, Any]:
        """Run to completion if needed; return ``summary``, ``tables``, ``node_names``, ``strings``."""
