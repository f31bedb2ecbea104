"""The ``network`` section: switches (buffer, ECN, PFC, scheduler, pipeline,
arbitration), hosts (NIC pipeline, host model, egress shaping) and per-switch and
per-host overrides.

A switch may name a device preset (``device: tomahawk-like``, see
:mod:`fabricsim.devices`): the preset's settings are put under the switch's
explicit ones before validation.
"""

from typing import Annotated, Any, Literal, Optional, TypeVar, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    PlainSerializer,
    PlainValidator,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
    model_validator,
)

from fabricsim import devices, units
from fabricsim.errors import unknown_value
from fabricsim.schema._base import (
    U32_MAX,
    ByteCount,
    DeferredModel,
    Duration,
    Energy,
    FrameSize,
    Model,
    Overhead,
    Overhead32,
    Power,
    Size,
    Size32,
    Time,
    deferred,
    issues_error,
    one_of,
    quantity,
    show,
)
from fabricsim.schema import extensions
from fabricsim.schema.egress import Egress, HostOverride, PortShaper
from fabricsim.schema.arbitration import Arbitration

__all__ = ["Buffer", "DevicePower", "Ecn", "Host", "LoadBalancing", "Network", "Pfc", "Switch"]

DeviceKind = Literal["switch", "broadcast"]
HeaderSize = Annotated[
    int, quantity(units.parse_size, units.format_size, 1, 65535), PlainSerializer(units.format_size, return_type=str)
]
"""Bytes of a frame a cut-through device receives before it forwards (1 B .. 64 KiB)."""
ForwardingMode = Literal["store_and_forward", "cut_through"]
BufferModel = Literal["static", "shared", "voq", "intelligent"]

MAX_DRR_WEIGHT = 1_000_000
"""Largest DRR weight: a million to one between two classes, beyond which the
lighter class is served less than once per run of any practical length."""

_ALPHA_LADDER = [2.0**k for k in range(-7, 4)]
_ALPHA_TEXT = "1/128, 1/64, 1/32, 1/16, 1/8, 1/4, 1/2, 1, 2, 4, 8"


def _alpha(value: Any) -> list[float]:
    """One alpha or a list of them (one per class), each on the hardware ladder."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise ValueError("must not be empty")
    out = []
    for item in values:
        if isinstance(item, bool) or not isinstance(item, (int, float)) or float(item) not in _ALPHA_LADDER:
            raise ValueError(f"{show(item)} is not an allowed alpha; allowed: {_ALPHA_TEXT} (0.0078125 .. 8)")
        out.append(float(item))
    return out


def _alpha_text(values: list[float]) -> Any:
    shown = [int(v) if v == int(v) else v for v in values]
    return shown[0] if len(shown) == 1 else shown


_ALPHA_SCHEMA = {"enum": _ALPHA_LADDER, "description": f"a power of two from 1/128 to 8 ({_ALPHA_TEXT})"}

Alpha = Annotated[
    list[float],
    PlainValidator(_alpha),
    PlainSerializer(_alpha_text),
    WithJsonSchema({"anyOf": [_ALPHA_SCHEMA, {"type": "array", "items": _ALPHA_SCHEMA, "minItems": 1, "maxItems": 8}]}),
]
"""A dynamic-threshold alpha (power of two, 1/128..8), or one per class."""


def _one_alpha(value: Any) -> float:
    if isinstance(value, list):
        raise ValueError(f"expected one alpha; allowed: {_ALPHA_TEXT}")
    return _alpha(value)[0]


OneAlpha = Annotated[float, PlainValidator(_one_alpha), WithJsonSchema(_ALPHA_SCHEMA)]
"""One dynamic-threshold alpha on the hardware ladder."""


def _pool_index(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 7:
        raise ValueError(f"expected a pool index 0..7, got {show(value)}")
    return value


PoolIndex = Annotated[int, PlainValidator(_pool_index), WithJsonSchema({"type": "integer", "minimum": 0, "maximum": 7})]

_STATIC_FIELDS = ("port_size", "queue_size", "queue_packets")
_SHARED_FIELDS = (
    "size",
    "cell",
    "per_packet_overhead",
    "alpha",
    "reserved_per_queue",
    "ingress_alpha",
    "pools",
    "class_pool",
    "slices",
    "port_slice",
    "pg_min",
    "class_pg",
    "headroom_per_port",
    "reserved_fixed",
)
_VOQ_FIELDS = ("size", "voq_limit")
_INTELLIGENT_FIELDS = (
    "size",
    "cell",
    "per_packet_overhead",
    "alpha",
    "reserved_per_queue",
    "port_max",
    "elephant_bytes",
    "etrap_age",
    "afd_period",
    "queue_desired",
    "afd_a",
    "afd_b",
    "afd_queue_unit",
    "afd_ecn",
    "dpp",
    "dpp_packets",
    "dpp_age",
    "dpp_class",
)
_MODEL_FIELDS = {
    "static": _STATIC_FIELDS,
    "shared": _SHARED_FIELDS,
    "voq": _VOQ_FIELDS,
    "intelligent": _INTELLIGENT_FIELDS,
}
#: A policy registered in the core (``_core.extensions()``) takes only ``params``.
_REGISTERED_FIELDS = ("params",)
_ALL_BUFFER_FIELDS = tuple(dict.fromkeys(f for fields in _MODEL_FIELDS.values() for f in fields)) + _REGISTERED_FIELDS


def _own_fields(model: str) -> tuple[str, ...]:
    return _MODEL_FIELDS.get(model, _REGISTERED_FIELDS)


def _size_or_time(value: Any) -> tuple[str, int]:
    """A VOQ limit: a size (``5MB``) or a time at the egress port rate (``5ms``)."""
    if isinstance(value, str):
        try:
            return ("time", units.parse_time(value))
        except ValueError:
            pass
    try:
        return ("size", units.parse_size(value))
    except ValueError:
        raise ValueError(f"expected a size like '5MB' or a time like '5ms', got {show(value)}") from None


def _size_or_time_text(value: tuple[str, int]) -> str:
    return units.format_time(value[1]) if value[0] == "time" else units.format_size(value[1])


SizeOrTime = Annotated[
    tuple[str, int],
    PlainValidator(_size_or_time),
    PlainSerializer(_size_or_time_text),
    WithJsonSchema({"type": "string", "description": "a size like '5MB' or a time at the port rate like '5ms'"}),
]


def _headroom(value: Any) -> list[tuple[int, int]]:
    """Headroom per port: one size for every port, or ``{speed: size}`` (a port
    takes the entry of the smallest listed speed at or above its own)."""
    if isinstance(value, dict):
        if not value:
            raise ValueError("must not be empty")
        out = []
        for speed, size in value.items():
            try:
                rate = units.parse_rate(speed)
            except ValueError:
                raise ValueError(f"expected port speeds like '100Gbps' as keys, got {show(speed)}") from None
            out.append((rate, units.parse_size(size)))
        out.sort()
        if len({r for r, _ in out}) != len(out):
            raise ValueError("a speed is listed twice")
        return out
    return [(2**64 - 1, units.parse_size(value))]


def _headroom_text(value: list[tuple[int, int]]) -> Any:
    if len(value) == 1 and value[0][0] == 2**64 - 1:
        return units.format_size(value[0][1])
    return {units.format_rate(rate): units.format_size(size) for rate, size in value}


HeadroomPerPort = Annotated[list[tuple[int, int]], PlainValidator(_headroom), PlainSerializer(_headroom_text)]


def _class_pg(value: Any) -> Any:
    return value if isinstance(value, list) else [value]


ClassPg = Annotated[list[Annotated[int, Field(ge=0, le=7)]], BeforeValidator(_class_pg)]


class Buffer(Model):
    """Packet buffer of a switch: ``static`` per-port drop-tail, ``shared``
    with dynamic thresholds, ``voq`` (deep-buffer virtual output queues) or
    ``intelligent`` (dynamic thresholds + elephant trap, AFD and DPP), or an
    admission policy registered in the core by name, with its ``params``
    (docs/extending/buffer-policy.md). Only the fields of the chosen model may be set."""

    model: Annotated[str, BeforeValidator(extensions.buffer_model)] = "static"
    # a registered policy: its parameters, checked by the policy's factory
    params: Optional[dict[str, Any]] = None
    # static
    port_size: Size = 1_000_000
    queue_size: Optional[Size] = None
    queue_packets: Optional[int] = Field(default=None, ge=1, le=2**32 - 1)
    # shared (and intelligent)
    size: Optional[Size] = None
    cell: Size32 = 256
    per_packet_overhead: Overhead32 = 0
    alpha: Alpha = Field(default_factory=lambda: [1.0])
    reserved_per_queue: ByteCount = 0
    ingress_alpha: Optional[Alpha] = None
    pools: Optional[Annotated[list[Size], Field(min_length=1, max_length=8)]] = None
    class_pool: Optional[list[PoolIndex]] = None
    slices: int = Field(default=1, ge=1, le=16)
    port_slice: Optional[list[Annotated[int, Field(ge=0, le=15)]]] = None
    pg_min: Overhead = 0
    class_pg: Optional[ClassPg] = None
    headroom_per_port: Optional[HeadroomPerPort] = None
    reserved_fixed: Overhead = 0
    # voq
    voq_limit: Optional[SizeOrTime] = None
    # intelligent
    port_max: Optional[Size] = None
    elephant_bytes: Size = 1_048_555
    etrap_age: Duration = 50_000_000
    afd_period: Duration = 25_000_000
    queue_desired: Size = 150_000
    afd_a: float = Field(default=1.8, ge=0, le=1000)
    afd_b: float = Field(default=1.7, ge=0, le=1000)
    afd_queue_unit: Size32 = 16
    afd_ecn: bool = False
    dpp: bool = True
    dpp_packets: int = Field(default=120, ge=0, le=U32_MAX)
    dpp_age: Duration = 5_000_000_000
    dpp_class: Optional[int] = Field(default=None, ge=0, le=7)

    def issues(self, classes: int = 8) -> list[tuple[str, str]]:
        """Fields that do not belong to the chosen model, missing required ones, and a registered
        policy's objections to its ``params`` (for a device of ``classes`` classes)."""
        own = _own_fields(self.model)
        found = []
        for name in _ALL_BUFFER_FIELDS:
            if name in own or name not in self.model_fields_set:
                continue
            owners = " or ".join(m for m, fields in _MODEL_FIELDS.items() if name in fields) or "a registered policy"
            found.append((name, f"only for model {owners} (model is {self.model})"))
        if self.model not in _MODEL_FIELDS:
            return found + extensions.param_issues("buffer", self.model, self.params or {}, classes)
        if self.model != "static" and self.size is None:
            found.append(("size", f"required field is missing for model {self.model}"))
        if self.model == "voq" and self.voq_limit is None:
            found.append(("voq_limit", "required field is missing for model voq"))
        return found

    @model_serializer(mode="wrap")
    def _own_fields_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        own = _own_fields(self.model)
        return {key: value for key, value in data.items() if key == "model" or key in own}

    def to_resolved(self) -> dict[str, Any]:
        if self.model not in _MODEL_FIELDS:
            return {"model": self.model, "params": self.params or {}}
        if self.model == "static":
            return {"model": self.model, "port_bytes": self.port_size, "queue_bytes": self.queue_size,
                    "queue_packets": self.queue_packets}
        if self.model == "voq":
            kind, value = self.voq_limit or ("size", 0)
            return {
                "model": "voq",
                "total_bytes": self.size,
                "voq_limit_bytes": value if kind == "size" else None,
                "voq_limit_ps": value if kind == "time" else None,
            }
        # shared and intelligent: dynamic thresholds over a cell-based shared buffer
        dynamic = {
            "model": self.model,
            "total_bytes": self.size,
            "cell_bytes": self.cell,
            "per_packet_overhead_bytes": self.per_packet_overhead,
            "alpha": self.alpha,
            "reserved_bytes_per_queue": self.reserved_per_queue,
        }
        if self.model == "intelligent":
            return {
                **dynamic,
                "port_max_bytes": self.port_max,
                "elephant_bytes": self.elephant_bytes,
                "etrap_age_ps": self.etrap_age,
                "afd_period_ps": self.afd_period,
                "queue_desired_bytes": self.queue_desired,
                "afd_a": self.afd_a,
                "afd_b": self.afd_b,
                "afd_queue_unit_bytes": self.afd_queue_unit,
                "afd_ecn": self.afd_ecn,
                "dpp": self.dpp,
                "dpp_packets": self.dpp_packets,
                "dpp_age_ps": self.dpp_age,
                "dpp_class": self.dpp_class,
            }
        # Reservations beyond the per-queue minimum are sent only when set.
        reserve: dict[str, Any] = {}
        if self.pg_min:
            reserve["pg_min_bytes"] = self.pg_min
        if self.class_pg is not None:
            reserve["class_pg"] = self.class_pg
        if self.headroom_per_port:
            reserve["headroom_per_port"] = [list(entry) for entry in self.headroom_per_port]
        if self.reserved_fixed:
            reserve["reserved_fixed_bytes"] = self.reserved_fixed
        return {
            **dynamic,
            "ingress_alpha": self.ingress_alpha,
            "pools": self.pools,
            "class_pool": self.class_pool,
            **(
                {"slices": self.slices, "port_slice": self.port_slice}
                if self.slices != 1 or self.port_slice is not None
                else {}
            ),
            **reserve,
        }


EcnMode = Literal["ecn", "drop"]
SchedulerKind = Literal["strict", "drr"]


class Ecn(Model):
    """RED/ECN marking (``mode: ecn``) or WRED dropping (``mode: drop``) on every
    egress queue, decided on the instantaneous queue bytes at enqueue.
    ``threshold: K`` is step marking (``kmin = kmax = K``, ``pmax = 1``)."""

    kmin: Optional[ByteCount] = None
    kmax: Optional[ByteCount] = None
    threshold: Optional[ByteCount] = None
    pmax: float = Field(default=1.0, gt=0.0, le=1.0)
    classes: Optional[list[Annotated[int, Field(ge=0, le=7)]]] = None
    mode: Annotated[EcnMode, one_of(EcnMode)] = "ecn"

    @model_validator(mode="after")
    def _thresholds(self) -> "Ecn":
        if self.threshold is not None:
            if self.kmin is not None or self.kmax is not None:
                raise issues_error(("threshold", "give either threshold (step marking) or kmin/kmax, not both"))
        elif self.kmin is None or self.kmax is None:
            raise issues_error(("kmin", "give threshold (step marking) or both kmin and kmax"))
        elif self.kmax < self.kmin:
            raise issues_error(("kmax", f"must be >= kmin ({units.format_size(self.kmin)})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        kmin = self.threshold if self.threshold is not None else self.kmin
        kmax = self.threshold if self.threshold is not None else self.kmax
        return {"kmin_bytes": kmin, "kmax_bytes": kmax, "pmax": self.pmax, "classes": self.classes, "mode": self.mode}


class Pfc(Model):
    """Priority flow control (802.1Qbb) of lossless ``classes`` (shared buffer
    only): XOFF at ``xoff`` bytes of a priority group's shared occupancy, or
    dynamically at ``xoff_alpha`` x free shared buffer; XON ``resume_offset``
    below it. ``headroom`` per (port, lossless class) defaults to the formula
    of ``docs/models/pfc.md`` (cable round trip, pipelines, 2 MTU, peer
    response quanta)."""

    classes: list[Annotated[int, Field(ge=0, le=7)]] = Field(min_length=1)
    xoff: Optional[ByteCount] = None
    xoff_alpha: OneAlpha = 0.125
    resume_offset: ByteCount = 3072
    headroom: Optional[ByteCount] = None
    mtu: Size = 9216
    quanta: int = Field(default=65535, ge=1, le=65535)
    refresh: Optional[Duration] = None

    def to_resolved(self) -> dict[str, Any]:
        return {
            "classes": self.classes,
            "xoff_bytes": self.xoff,
            "xoff_alpha": self.xoff_alpha,
            "resume_offset_bytes": self.resume_offset,
            "headroom_bytes": self.headroom,
            "mtu_bytes": self.mtu,
            "quanta": self.quanta,
            "refresh_ps": self.refresh,
        }


LoadBalancingMode = Literal["ecmp", "spray_random", "spray_rr", "flowlet", "adaptive"]
DEFAULT_FLOWLET_GAP = 50_000_000
"""The flowlet gap of ``mode: flowlet`` when none is given: 50 us."""


def _lb_shorthand(value: Any) -> Any:
    """``load_balancing: spray_rr`` is ``load_balancing: {mode: spray_rr}``."""
    return {"mode": value} if isinstance(value, str) else value


class _ModeOrMapping:
    """JSON Schema of ``load_balancing``: the mode alone, or the mapping."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        return {"anyOf": [{"type": "string", "enum": list(get_args(LoadBalancingMode))}, handler(core_schema)]}


class LoadBalancing(Model):
    """How a switch spreads packets over its equal-cost next hops
    (``docs/models/load-balancing.md``): ``ecmp`` (one path per flow, by the
    5-tuple hash), ``spray_random`` (a random port per packet), ``spray_rr``
    (round robin per packet), ``flowlet`` (a new random port after an idle gap
    of ``flowlet_gap``, 50us unless given) or ``adaptive`` (the port with the
    fewest queued bytes, ties at random; per packet, or once per flowlet
    when ``flowlet_gap`` is given). Written as the mode alone or as a
    mapping with ``mode`` and ``flowlet_gap``."""

    mode: Annotated[LoadBalancingMode, one_of(LoadBalancingMode)] = "ecmp"
    flowlet_gap: Optional[Duration] = None

    @model_validator(mode="after")
    def _gap_of_mode(self) -> "LoadBalancing":
        if self.flowlet_gap is not None and self.mode not in ("flowlet", "adaptive"):
            raise issues_error(("flowlet_gap", f"only for modes flowlet and adaptive (mode is {self.mode})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        gap = self.flowlet_gap
        if gap is None:
            gap = DEFAULT_FLOWLET_GAP if self.mode == "flowlet" else 0
        return {"mode": self.mode, "flowlet_gap_ps": gap}


class Trimming(DeferredModel):
    """``switch.trimming``: a data packet the buffer has no room for is cut to
    its ``header`` and forwarded in class ``class`` (the highest class unless
    given) instead of being dropped, as NDP's and the Ultra Ethernet
    transport's switches do (``docs/models/trimming.md``). RoCE data packets
    are trimmed; the receiver asks for the packet again at once."""

    #: Size of a trimmed frame (at least the 64 B minimum Ethernet frame).
    header: FrameSize = 64
    class_: Optional[Annotated[int, Field(ge=0, le=7)]] = Field(default=None, alias="class")

    def to_resolved(self) -> dict[str, Any]:
        out: dict[str, Any] = {"header_bytes": self.header}
        if self.class_ is not None:
            out["class"] = self.class_
        return out


class DevicePower(Model):
    """Power model of a device (``docs/models/power.md``): ``idle`` with no
    port in use, plus ``port`` per port in use, plus ``per_bit`` and
    ``per_packet`` energy for the frames it forwards."""

    idle: Power = 0
    port: Power = 0
    per_bit: Energy = 0
    per_packet: Energy = 0

    def to_resolved(self) -> dict[str, Any]:
        return {"idle_uw": self.idle, "port_uw": self.port, "bit_fj": self.per_bit, "packet_fj": self.per_packet}


def _expand_device(data: Any) -> Any:
    """Put the named device preset under the switch's explicit settings."""
    if not isinstance(data, dict) or data.get("device") is None:
        return data
    name = data["device"]
    if not isinstance(name, str) or name not in devices.names():
        raise issues_error(("device", unknown_value(name, devices.names())))
    return devices.merged(name, data)


class Switch(Model):
    """Switch parameters: the network-wide default or a per-switch override.

    ``kind: broadcast`` makes the node a broadcast fabric with its own adapters
    (``docs/models/broadcast-fabric.md``): it forwards from the header on
    (``forwarding`` defaults to ``cut_through``), keeps one ``static`` receive
    buffer per adapter, and has no ECN or PFC."""

    device: Optional[str] = None
    kind: Annotated[DeviceKind, one_of(DeviceKind)] = "switch"
    forwarding: Annotated[ForwardingMode, one_of(ForwardingMode)] = "store_and_forward"
    cut_through_header: HeaderSize = 64
    mtu: Optional[FrameSize] = None
    power: Optional[DevicePower] = None
    latency: Time = 500_000
    buffer: Buffer = Field(default_factory=Buffer)
    ecn: Optional[Ecn] = None
    scheduler: Annotated[SchedulerKind, one_of(SchedulerKind)] = "strict"
    drr_quantum: Annotated[
        list[Size32],
        BeforeValidator(lambda v: v if isinstance(v, list) else [v]),
        Field(min_length=1, max_length=8),
        WithJsonSchema(
            {
                "description": "the DRR quantum of every class, or one per class (sizes like '1500B')",
                "anyOf": [{"type": ["string", "integer"]}, {"type": "array", "minItems": 1, "maxItems": 8}],
            }
        ),
    ] = Field(default_factory=lambda: [1500])
    #: Relative weights (finite, > 0 and at most MAX_DRR_WEIGHT): quanta in proportion, the first class's quantum the unit.
    drr_weights: Optional[list[Annotated[float, Field(gt=0, le=MAX_DRR_WEIGHT)]]] = Field(
        default=None, min_length=1, max_length=8
    )
    pfc: Optional[Pfc] = None
    pipeline: Optional[deferred("fabricsim.schema.pipeline:Pipeline")] = None
    arbitration: Arbitration = Field(default_factory=Arbitration)
    #: Egress ports shaped like an htb class; see :mod:`fabricsim.schema.egress`.
    shaper: Optional[deferred(PortShaper)] = None
    #: Spreading over equal-cost next hops; see :class:`LoadBalancing`.
    load_balancing: Annotated[LoadBalancing, BeforeValidator(_lb_shorthand), _ModeOrMapping()] = Field(
        default_factory=LoadBalancing
    )
    #: Trimming instead of dropping; see :class:`Trimming`.
    trimming: Optional[deferred(Trimming)] = None

    _expand = model_validator(mode="before")(classmethod(lambda cls, data: _expand_device(data)))

    @model_validator(mode="after")
    def _broadcast_fabric(self) -> "Switch":
        if self.kind != "broadcast":
            return self
        if "forwarding" not in self.model_fields_set:
            self.forwarding = "cut_through"
        issues = []
        if self.forwarding != "cut_through":
            issues.append(("forwarding", "a broadcast fabric delivers from the header on: must be cut_through"))
        if "buffer" in self.model_fields_set and self.buffer.model != "static":
            issues.append(("buffer.model", "a broadcast fabric has one receive buffer per adapter: must be static"))
        if self.ecn is not None:
            issues.append(("ecn", "not available on a broadcast fabric"))
        if self.pfc is not None:
            issues.append(("pfc", "not available on a broadcast fabric"))
        if issues:
            raise issues_error(*issues)
        return self

    @model_validator(mode="after")
    def _quanta_fit(self) -> "Switch":
        """A weight times the base quantum must fit the core's 32-bit quantum."""
        if self.drr_weights is not None:
            base = self.drr_quantum[0]
            for i, weight in enumerate(self.drr_weights):
                quantum = round(weight * base)
                if quantum > U32_MAX:
                    raise issues_error(
                        (f"drr_weights[{i}]", f"gives a quantum of {quantum:.3g} bytes ({weight:g} x {base} B); "
                         f"at most {U32_MAX} bytes")
                    )
        return self

    def to_resolved(self) -> dict[str, Any]:
        if self.scheduler == "drr":
            quantum = list(self.drr_quantum)
            if self.drr_weights is not None:
                base = quantum[0]
                quantum = [max(1, round(w * base)) for w in self.drr_weights]
            scheduler: dict[str, Any] = {"kind": "drr", "quantum_bytes": quantum}
        else:
            scheduler = {"kind": "strict"}
        out: dict[str, Any] = {"forwarding": self.forwarding, "latency_ps": self.latency, "buffer": self.buffer.to_resolved()}
        # Defaults (a plain switch; the header only matters when cutting through) are left out.
        if self.kind != "switch":
            out["kind"] = self.kind
        if self.forwarding == "cut_through":
            out["cut_through_bytes"] = self.cut_through_header
        if self.mtu is not None:
            out["mtu_bytes"] = self.mtu
        if self.shaper is not None:
            out["shaper"] = self.shaper.to_resolved()
        if self.power is not None:
            out["power"] = self.power.to_resolved()
        # Defaults (no ECN, strict priority) are left out, as the core assumes them.
        if self.ecn is not None:
            out["ecn"] = self.ecn.to_resolved()
        if scheduler["kind"] != "strict":
            out["scheduler"] = scheduler
        if self.pfc is not None:
            out["pfc"] = self.pfc.to_resolved()
        if self.pipeline is not None:
            out["pipeline"] = self.pipeline.to_resolved()
        if self.arbitration.kind != "fifo" or self.arbitration.input_queue_size is not None:
            out["arbitration"] = self.arbitration.to_resolved()
        if self.load_balancing.mode != "ecmp":
            out["load_balancing"] = self.load_balancing.to_resolved()
        if self.trimming is not None:
            out["trimming"] = self.trimming.to_resolved()
        return out


class Host(Model):
    """Host (NIC) parameters; ``pipeline`` runs on every host's NIC, on receive
    and transmit (each stage's ``direction``)."""

    latency: Time = 0
    nic_buffer: Size = 1_000_000_000
    #: Packets each class queue of a host NIC holds before it refuses a UDP datagram: the
    #: device's ``txqueuelen``, 1000 on Linux, held by each band of the default qdisc. TCP
    #: segments are held back instead (TCP Small Queues), and RoCE bypasses the qdisc.
    txqueuelen: int = Field(default=1000, ge=1, le=U32_MAX)
    pipeline: Optional[deferred("fabricsim.schema.pipeline:Pipeline")] = None
    #: CPU cores, software stack and NIC DMA of every host (``None``: ideal hosts); see :mod:`fabricsim.schema.host`.
    model: Optional[deferred("fabricsim.schema.host:HostModel")] = None
    #: Jitter, htb-like shaper and netem-like delay below every host's stack; see :mod:`fabricsim.schema.egress`.
    egress: Optional[deferred(Egress)] = None

    def to_resolved(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "latency_ps": self.latency,
            "nic_buffer_bytes": self.nic_buffer,
            "txqueuelen": self.txqueuelen,
        }
        if self.pipeline is not None:
            out["pipeline"] = self.pipeline.to_resolved()
        if self.model is not None:
            out["model"] = self.model.to_resolved()
        if self.egress is not None:
            out["egress"] = self.egress.to_resolved()
        return out


_M = TypeVar("_M", bound=BaseModel)


def _overlay(base: _M, override: _M) -> _M:
    """``base`` with the fields explicitly set in ``override``, nested models merged."""
    updates: dict[str, Any] = {}
    for name in override.model_fields_set:
        value = getattr(override, name)
        current = getattr(base, name)
        switches_buffer_model = (
            isinstance(value, Buffer) and "model" in value.model_fields_set and value.model != current.model
        )
        if isinstance(value, BaseModel) and type(value) is type(current) and not switches_buffer_model:
            value = _overlay(current, value)
        updates[name] = value
    return base.model_copy(update=updates)


class Network(Model):
    """Network-wide settings.

    ``switch_overrides`` entries are merged over ``switch``: an override only
    needs the settings that differ (``{leaf0: {buffer: {port_size: 4MB}}}``).
    A buffer override that names a different ``model`` replaces the buffer.
    After validation each entry holds the complete merged switch.
    """

    ethernet_overhead: Overhead32 = 20
    classes: int = Field(default=8, ge=1, le=8)
    switch: Switch = Field(default_factory=Switch)
    host: Host = Field(default_factory=Host)
    switch_overrides: dict[str, Switch] = Field(default_factory=dict)
    #: Per-host settings merged over ``host`` (``{h0: {egress: {delay: 25ms}}}``).
    host_overrides: dict[str, deferred(HostOverride)] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _merge_overrides(self) -> "Network":
        self.switch_overrides = {
            name: _overlay(self.switch, override) for name, override in self.switch_overrides.items()
        }
        base = self.host.egress
        if base is not None:
            self.host_overrides = {
                name: o if o.egress is None else o.model_copy(update={"egress": _overlay(base, o.egress)})
                for name, o in self.host_overrides.items()
            }
        issues = [(f"switch.buffer.{field}", message) for field, message in self.switch.buffer.issues(self.classes)]
        for name, spec in self.switch_overrides.items():
            path = f"switch_overrides.{name}.buffer"
            issues.extend((f"{path}.{field}", message) for field, message in spec.buffer.issues(self.classes))
        if issues:
            raise issues_error(*issues)
        return self

    def to_resolved(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ethernet_overhead_bytes": self.ethernet_overhead,
            "classes": self.classes,
            "switch": self.switch.to_resolved(),
            "host": self.host.to_resolved(),
            "switch_overrides": {name: spec.to_resolved() for name, spec in self.switch_overrides.items()},
        }
        if self.host_overrides:
            out["host_overrides"] = {name: spec.to_resolved() for name, spec in self.host_overrides.items()}
        return out
