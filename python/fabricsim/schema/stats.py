"""What a run records and how it is summarised: ``stats`` (sampling of queues and
throughput, passed to the core) and ``fct`` (flow-completion-time statistics,
computed in Python by :mod:`fabricsim.outputs.fct`)."""

from typing import Any

from pydantic import Field, model_validator

from fabricsim.schema._base import Model, Size, Time, issues_error

__all__ = ["FctSettings", "Stats"]


class FctSettings(Model):
    """Flow-completion-time statistics (:mod:`fabricsim.outputs.fct`): only flows started in
    ``[warmup, duration - cooldown]`` count; ``buckets`` are the size-bucket edges."""

    warmup: Time = 0
    cooldown: Time = 0
    buckets: list[Size] = Field(default_factory=lambda: [100_000, 1_000_000, 10_000_000])

    @model_validator(mode="after")
    def _sorted(self) -> "FctSettings":
        if self.buckets != sorted(set(self.buckets)):
            raise issues_error(("buckets", "edges must be increasing"))
        return self


class Stats(Model):
    """What to record besides per-flow results."""

    queue_sample_interval: Time = 10_000_000
    sample_hosts: bool = False
    throughput_interval: Time = 1_000_000_000
    power_interval: Time = 1_000_000_000
    #: Width of the CPU busy-time bins of host models (the ``cpu`` table); 0 turns them off.
    cpu_interval: Time = 100_000_000

    def to_resolved(self) -> dict[str, Any]:
        return {
            "queue_sample_interval_ps": self.queue_sample_interval,
            "sample_hosts": self.sample_hosts,
            "throughput_interval_ps": self.throughput_interval,
            **({"power_interval_ps": self.power_interval} if self.power_interval != 1_000_000_000 else {}),
            "cpu_interval_ps": self.cpu_interval,
        }
