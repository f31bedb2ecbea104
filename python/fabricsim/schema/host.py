"""``network.host.model``: the host datapath (CPU cores running the software
stack, and the NIC between it and the wire) of every host.

A model is a preset name (``linux-kernel``), or a mapping with an optional
``preset`` whose settings the mapping's own keys override (see
:mod:`fabricsim.hosts`). A stage is a mapping with a ``kind`` (``tcp``,
``udp``, ``driver``, ``syscall`` or any match-action stage kind of
``pipeline``), an optional ``name``, its cost per direction (``tx``, ``rx``:
``per_packet``, ``per_byte``, ``per_ack``) and, for a match-action kind,
that kind's own fields. See ``docs/models/host.md``.
"""

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, PlainSerializer, PlainValidator, create_model, model_validator

from fabricsim import hosts, units
from fabricsim.errors import unknown_value
from fabricsim.schema._base import (
    U32_MAX,
    DeferredModel,
    Load,
    Overhead32,
    Size,
    Time,
    issues_error,
    kind_of,
    one_of,
    show,
)
from fabricsim.schema.pipeline import STAGE_MODELS

__all__ = ["CPU_KINDS", "HostModel", "HostStage", "StageCost"]


def _per_byte(value: Any) -> int:
    """A time per byte, held in femtoseconds: ``"0.34ns"`` (or 0)."""
    try:
        return units.parse_time_fs(value)
    except ValueError as exc:
        raise ValueError(f"{exc} (a time per byte, like '0.34ns')") from None


def _fs_text(fs: int) -> str:
    return f"{fs / 1_000_000:g}ns" if fs else "0"


PerByte = Annotated[int, PlainValidator(_per_byte), PlainSerializer(_fs_text, return_type=str)]
"""A time per byte >= 0, held in femtoseconds, written like ``0.34ns``."""


class StageCost(DeferredModel):
    """CPU time of a stage in one direction: ``per_packet`` (per skb, frame,
    datagram or message by kind) plus ``per_byte`` of frame bytes; a TCP
    segment without payload costs ``per_ack`` instead when given."""

    per_packet: Time = 0
    per_byte: PerByte = 0
    per_ack: Optional[Time] = None

    def to_resolved(self) -> dict[str, Any]:
        return {"per_packet_ps": self.per_packet, "per_byte_fs": self.per_byte, "per_ack_ps": self.per_ack}


CpuKind = Literal["tcp", "udp", "driver", "syscall"]
CPU_KINDS: tuple[str, ...] = ("tcp", "udp", "driver", "syscall")


class CpuStage(DeferredModel):
    """A CPU-only stage: the TCP or UDP/IP stack, the NIC driver, the system calls."""

    kind: CpuKind
    name: Optional[str] = Field(default=None, min_length=1)
    tx: StageCost = Field(default_factory=StageCost)
    rx: StageCost = Field(default_factory=StageCost)

    def to_resolved(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "tx": self.tx.to_resolved(), "rx": self.rx.to_resolved()}
        if self.name is not None:
            out["name"] = self.name
        return out


def _software(model: type) -> type:
    """The match-action stage ``model`` run in software: its fields plus ``tx``/``rx`` costs, no pipe cost or latency."""

    def check(self: Any) -> Any:
        if self.cost is not None or self.latency:
            field = "cost" if self.cost is not None else "latency"
            raise issues_error((field, "a software stage costs CPU time ('tx', 'rx'), not pipe passes or latency"))
        return self

    cls = create_model(
        f"Software{model.__name__}",
        __base__=model,
        __validators__={"_no_pipe_cost": model_validator(mode="after")(check)},
        tx=(StageCost, Field(default_factory=StageCost)),
        rx=(StageCost, Field(default_factory=StageCost)),
    )
    own = model.to_resolved

    def to_resolved(self: Any) -> dict[str, Any]:
        return {**own(self), "tx": self.tx.to_resolved(), "rx": self.rx.to_resolved()}

    cls.to_resolved = to_resolved  # type: ignore[attr-defined]
    return cls


SOFT_MODELS = tuple(_software(m) for m in STAGE_MODELS)
HOST_STAGE_MODELS = (CpuStage, *SOFT_MODELS)
HostStage = Annotated[
    Union[(CpuStage, *SOFT_MODELS)],  # type: ignore[valid-type]
    Field(discriminator="kind"),
    kind_of(*HOST_STAGE_MODELS),
]


class Interrupt(DeferredModel):
    """Receive interrupt coalescing (``ethtool -C rx-usecs/rx-frames``) and the CPU cost of an interrupt."""

    usecs: Time = 0
    frames: int = Field(default=0, ge=0, le=U32_MAX)
    cost: Time = 0

    def to_resolved(self) -> dict[str, Any]:
        return {"usecs_ps": self.usecs, "frames": self.frames, "cost_ps": self.cost}


class Nic(DeferredModel):
    """DMA between host memory and the NIC: a fixed latency plus a time per byte, each direction;
    ``cut_through``: the bytes of a frame (one PCIe transfer, e.g. 256B) the card needs before it
    starts the frame on the wire, and moves after the frame's last bit on receive (the rest of
    the transfer overlaps the wire); unset, every frame crosses PCIe whole first."""

    tx_latency: Time = 0
    tx_per_byte: PerByte = 0
    rx_latency: Time = 0
    rx_per_byte: PerByte = 0
    cut_through: Optional[Size] = None

    def to_resolved(self) -> dict[str, Any]:
        out = {
            "tx_latency_ps": self.tx_latency,
            "tx_per_byte_fs": self.tx_per_byte,
            "rx_latency_ps": self.rx_latency,
            "rx_per_byte_fs": self.rx_per_byte,
        }
        if self.cut_through is not None:
            out["cut_through_bytes"] = self.cut_through
        return out


Steering = Literal["rss", "app"]


def _expand_preset(value: Any) -> Any:
    """A preset name, or a mapping with ``preset``: the preset's settings with the mapping's over them."""
    if isinstance(value, str):
        value = {"preset": value}
    if not isinstance(value, dict) or value.get("preset") is None:
        return value
    name = value["preset"]
    if not isinstance(name, str) or name not in hosts.names():
        raise issues_error(("preset", unknown_value(name, hosts.names())))
    explicit = {k: v for k, v in value.items() if k != "preset"}
    return {"preset": name, **hosts.merged(name, explicit)}


class HostModel(DeferredModel):
    """CPU cores (``cores`` per machine, ``core_share`` of each), how received
    packets find their core (``rx_steering``), the per-core receive ``backlog``
    and transmit queue, GSO/TSO and GRO batching, NAPI budget, interrupt
    coalescing, NIC DMA and the software ``stages``. ``machines`` lists groups
    of hosts that are namespaces of one machine and share its cores."""

    preset: Optional[str] = None
    cores: int = Field(default=1, ge=1, le=4096)
    core_share: Load = 1.0
    rx_steering: Annotated[Steering, one_of(Steering)] = "rss"
    backlog: int = Field(default=1000, ge=1, le=U32_MAX)
    tx_queue: int = Field(default=1 << 20, ge=1, le=U32_MAX)
    machines: list[list[str]] = Field(default_factory=list)
    gso: Overhead32 = 0
    tso: bool = False
    gro: Overhead32 = 0
    napi_budget: int = Field(default=64, ge=1, le=U32_MAX)
    interrupt: Interrupt = Field(default_factory=Interrupt)
    nic: Nic = Field(default_factory=Nic)
    message_size: Size = 128 * 1024
    stages: list[HostStage] = Field(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _preset(cls, data: Any, handler: Any) -> Any:
        return handler(_expand_preset(data))

    @model_validator(mode="after")
    def _checks(self) -> "HostModel":
        if self.tso and self.gso == 0:
            raise issues_error(("tso", "needs transmit batches: give gso (e.g. 64KiB)"))
        seen: dict[str, int] = {}
        for g, group in enumerate(self.machines):
            for j, name in enumerate(group):
                if name in seen:
                    raise issues_error((f"machines[{g}][{j}]", f"host {show(name)} is already in machines[{seen[name]}]"))
                seen[name] = g
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "cores": self.cores,
            "core_share_ppm": max(1, round(self.core_share * 1_000_000)),
            "rx_steering": self.rx_steering,
            "backlog_packets": self.backlog,
            "tx_queue_packets": self.tx_queue,
            "machines": [list(g) for g in self.machines],
            "gso_bytes": self.gso,
            "tso": self.tso,
            "gro_bytes": self.gro,
            "napi_budget": self.napi_budget,
            "interrupt": self.interrupt.to_resolved(),
            "nic": self.nic.to_resolved(),
            "message_bytes": self.message_size,
            "stages": [s.to_resolved() for s in self.stages],
        }
