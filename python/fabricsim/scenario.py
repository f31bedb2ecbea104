"""User-facing scenario: YAML with units, validated and resolved for the core.

A scenario file looks like::

    name: quickstart
    seed: 1
    duration: 10ms
    topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
    traffic:
      - {kind: udp_cbr, src: [h1, h2], dst: h0, rate: 40%}

:func:`load` reads and validates a file, :meth:`Scenario.to_resolved` turns
the result into the plain-integer JSON document described in
``docs/contract.md``. Every problem is reported as a
:class:`~fabricsim.errors.ScenarioError` naming the dotted field path
(``traffic[1].rate``) and, for enumerations and unknown keys, the allowed
names.
"""

import copy
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Optional, Sequence, TypeVar, Union, get_args

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from fabricsim import units
from fabricsim.errors import ScenarioError, unknown_key, unknown_value

__all__ = [
    "Buffer",
    "Burst",
    "Dumbbell",
    "Explicit",
    "ExplicitLink",
    "ExplicitNode",
    "FatTree",
    "Host",
    "LeafSpine",
    "Link",
    "Network",
    "Scenario",
    "Star",
    "Stats",
    "Switch",
    "TrafficRate",
    "Tcp",
    "TcpBulk",
    "TcpFlows",
    "TcpIncast",
    "Workload",
    "UdpTraffic",
    "from_dict",
    "load",
    "loads",
]

_U64_MAX = 2**64 - 1


# --------------------------------------------------------------------------
# Error plumbing


_ISSUES = "fabricsim_issues"


def _issues_error(*issues: tuple[str, str]) -> PydanticCustomError:
    """A validation error holding issues at paths relative to the value being validated."""
    return PydanticCustomError(
        _ISSUES,
        "{message}",
        {"message": "; ".join(f"{path}: {message}" for path, message in issues), "issues": list(issues)},
    )


def _show(value: Any) -> str:
    """Render an input value in messages the way it would appear in YAML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _join_path(base: str, relative: str) -> str:
    if not base or not relative:
        return base or relative
    return base + relative if relative.startswith("[") else f"{base}.{relative}"


def _loc_path(loc: tuple[Union[int, str], ...], data: Any) -> str:
    """Dotted path of a pydantic error location, without discriminator tags.

    Pydantic inserts the tag of a discriminated union (``'star'``) into the
    location; it is recognised by walking the input alongside the location.
    """
    path = ""
    node = data
    for item in loc:
        if isinstance(node, dict) and item not in node and node.get("kind") == item:
            continue
        path = _join_path(path, f"[{item}]" if isinstance(item, int) else str(item))
        if isinstance(node, dict) and item in node:
            node = node[item]
        elif isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node):
            node = node[item]
        else:
            node = None
    return path


def _error_message(error: ErrorDetails) -> str:
    """A short, pydantic-free message for one validation error."""
    kind = error["type"]
    ctx = error.get("ctx", {})
    got = _show(error.get("input"))
    bounds = {
        "greater_than": ">",
        "greater_than_equal": ">=",
        "less_than": "<",
        "less_than_equal": "<=",
    }
    if kind == "missing":
        return "required field is missing"
    if kind == "value_error":
        return str(ctx["error"])
    if kind in bounds:
        limit = next(iter(ctx.values()))
        return f"must be {bounds[kind]} {limit} (got {got})"
    expected = {
        "int_type": "an integer",
        "string_type": "a string",
        "bool_type": "true or false",
        "list_type": "a list",
        "dict_type": "a mapping",
        "model_type": "a mapping",
        "model_attributes_type": "a mapping",
    }
    if kind in expected:
        return f"expected {expected[kind]}, got {got}"
    if kind in ("too_short", "string_too_short"):
        return "must not be empty"
    return str(error["msg"])


def _issues(exc: ValidationError, data: Any) -> list[tuple[str, str]]:
    issues: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        path = _loc_path(error["loc"], data)
        if error["type"] == _ISSUES:
            issues.extend((_join_path(path, relative), message) for relative, message in error["ctx"]["issues"])
        else:
            issues.append((path, _error_message(error)))
    return issues


# --------------------------------------------------------------------------
# Field types


def _quantity(
    parse: Callable[[Any], int], fmt: Callable[[int], str], minimum: int, maximum: Optional[int] = None
) -> PlainValidator:
    """Validator parsing a unit string and checking its range."""

    def validate(value: Any) -> int:
        number = parse(value)
        if number < minimum:
            bound = "> 0" if minimum == 1 else f">= {fmt(minimum)}"
            raise ValueError(f"must be {bound} (got {_show(value)})")
        if maximum is not None and number > maximum:
            raise ValueError(f"must be <= {fmt(maximum)} (got {_show(value)})")
        return number

    return PlainValidator(validate)


def _as_time(ps: int) -> str:
    return units.format_time(ps)


_TIME_TEXT = PlainSerializer(_as_time, return_type=str)
_RATE_TEXT = PlainSerializer(units.format_rate, return_type=str)
_SIZE_TEXT = PlainSerializer(units.format_size, return_type=str)

Time = Annotated[int, _quantity(units.parse_time, _as_time, 0), _TIME_TEXT]
"""A time >= 0, held in picoseconds, written like ``500ns``."""
Duration = Annotated[int, _quantity(units.parse_time, _as_time, 1), _TIME_TEXT]
"""A time > 0, held in picoseconds."""
Rate = Annotated[int, _quantity(units.parse_rate, units.format_rate, 1), _RATE_TEXT]
"""A data rate > 0, held in bit/s, written like ``100Gbps``."""
Size = Annotated[int, _quantity(units.parse_size, units.format_size, 1), _SIZE_TEXT]
"""A size > 0, held in bytes, written like ``1MB``."""
Overhead = Annotated[int, _quantity(units.parse_size, units.format_size, 0), _SIZE_TEXT]
"""A size >= 0, held in bytes."""
FrameSize = Annotated[int, _quantity(units.parse_size, units.format_size, 64, 65535), _SIZE_TEXT]
"""An Ethernet frame size between 64 and 65535 bytes."""


def _one_of(choices: Any) -> BeforeValidator:
    """Validator rejecting values outside the ``Literal`` ``choices``, listing the allowed ones."""
    allowed = get_args(choices)

    def validate(value: Any) -> Any:
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(unknown_value(value, allowed))
        return value

    return BeforeValidator(validate)


def _kind_of(*models: type[BaseModel]) -> BeforeValidator:
    """Validator checking the ``kind`` key of a discriminated union before dispatch."""
    allowed = [tag for model in models for tag in get_args(model.model_fields["kind"].annotation)]
    choices = ", ".join(allowed)

    def validate(value: Any) -> Any:
        if isinstance(value, dict):
            if "kind" not in value:
                raise _issues_error(("kind", f"required field is missing; allowed: {choices}"))
            if value["kind"] not in allowed:
                raise _issues_error(("kind", unknown_value(value["kind"], allowed)))
        return value

    return BeforeValidator(validate)


def _listify(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


NodeList = Annotated[list[str], BeforeValidator(_listify), Field(min_length=1)]
"""One node name or a non-empty list of them."""

ForwardingMode = Literal["store_and_forward", "cut_through"]
BufferModel = Literal["static", "shared", "voq", "intelligent"]
NodeKind = Literal["host", "switch"]
CongestionControl = Literal["newreno", "cubic", "dctcp"]


# --------------------------------------------------------------------------
# Models


class _Model(BaseModel):
    """Strict model rejecting unknown keys with the list of allowed ones."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="wrap")
    @classmethod
    def _known_keys_only(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        """Report unknown keys with the allowed ones, together with the other problems."""
        if not isinstance(data, dict):
            return handler(data)
        allowed = [field.alias or name for name, field in cls.model_fields.items()]
        unknown = [key for key in data if key not in allowed]
        if not unknown:
            return handler(data)
        known = {key: value for key, value in data.items() if key in allowed}
        issues = []
        try:
            handler(known)
        except ValidationError as exc:
            issues = _issues(exc, known)
        issues.extend((str(key), unknown_key(key, allowed)) for key in unknown)
        raise _issues_error(*issues)


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
            raise ValueError(f"{_show(item)} is not an allowed alpha; allowed: {_ALPHA_TEXT} (0.0078125 .. 8)")
        out.append(float(item))
    return out


def _alpha_text(values: list[float]) -> Any:
    shown = [int(v) if v == int(v) else v for v in values]
    return shown[0] if len(shown) == 1 else shown


Alpha = Annotated[list[float], PlainValidator(_alpha), PlainSerializer(_alpha_text)]
"""A dynamic-threshold alpha (power of two, 1/128..8), or one per class."""


def _pool_index(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 7:
        raise ValueError(f"expected a pool index 0..7, got {_show(value)}")
    return value


PoolIndex = Annotated[int, PlainValidator(_pool_index)]

_STATIC_FIELDS = ("port_size", "queue_size")
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
_ALL_BUFFER_FIELDS = tuple(dict.fromkeys(f for fields in _MODEL_FIELDS.values() for f in fields))


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
        raise ValueError(f"expected a size like '5MB' or a time like '5ms', got {_show(value)}") from None


def _size_or_time_text(value: tuple[str, int]) -> str:
    return units.format_time(value[1]) if value[0] == "time" else units.format_size(value[1])


SizeOrTime = Annotated[tuple[str, int], PlainValidator(_size_or_time), PlainSerializer(_size_or_time_text)]


class Buffer(_Model):
    """Packet buffer of a switch: ``static`` per-port drop-tail, ``shared``
    with dynamic thresholds, ``voq`` (deep-buffer virtual output queues) or
    ``intelligent`` (dynamic thresholds + elephant trap, AFD and DPP). Only the
    fields of the chosen model may be set."""

    model: Annotated[BufferModel, _one_of(BufferModel)] = "static"
    # static
    port_size: Size = 1_000_000
    queue_size: Optional[Size] = None
    # shared (and intelligent)
    size: Optional[Size] = None
    cell: Size = 256
    per_packet_overhead: Overhead = 0
    alpha: Alpha = Field(default_factory=lambda: [1.0])
    reserved_per_queue: Overhead = 0
    ingress_alpha: Optional[Alpha] = None
    pools: Optional[Annotated[list[Size], Field(min_length=1, max_length=8)]] = None
    class_pool: Optional[list[PoolIndex]] = None
    slices: int = Field(default=1, ge=1, le=16)
    port_slice: Optional[list[Annotated[int, Field(ge=0, le=15)]]] = None
    # voq
    voq_limit: Optional[SizeOrTime] = None
    # intelligent
    port_max: Optional[Size] = None
    elephant_bytes: Size = 1_048_555
    etrap_age: Duration = 50_000_000
    afd_period: Duration = 25_000_000
    queue_desired: Size = 150_000
    afd_a: float = 1.8
    afd_b: float = 1.7
    afd_queue_unit: Size = 16
    afd_ecn: bool = False
    dpp: bool = True
    dpp_packets: int = Field(default=120, ge=0)
    dpp_age: Duration = 5_000_000_000
    dpp_class: Optional[int] = Field(default=None, ge=0, le=7)

    def issues(self) -> list[tuple[str, str]]:
        """Fields that do not belong to the chosen model, and missing required ones."""
        own = _MODEL_FIELDS[self.model]
        found = []
        for name in _ALL_BUFFER_FIELDS:
            if name in own or name not in self.model_fields_set:
                continue
            owners = " or ".join(m for m, fields in _MODEL_FIELDS.items() if name in fields)
            found.append((name, f"only for model {owners} (model is {self.model})"))
        if self.model != "static" and self.size is None:
            found.append(("size", f"required field is missing for model {self.model}"))
        if self.model == "voq" and self.voq_limit is None:
            found.append(("voq_limit", "required field is missing for model voq"))
        return found

    @model_serializer(mode="wrap")
    def _own_fields_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        own = _MODEL_FIELDS[self.model]
        return {key: value for key, value in data.items() if key == "model" or key in own}

    def to_resolved(self) -> dict[str, Any]:
        if self.model == "static":
            return {"model": self.model, "port_bytes": self.port_size, "queue_bytes": self.queue_size}
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
        }


EcnMode = Literal["ecn", "drop"]
SchedulerKind = Literal["strict", "drr"]
ByteCount = Annotated[int, _quantity(units.parse_size, units.format_size, 0), _SIZE_TEXT]


class Ecn(_Model):
    """RED/ECN marking (``mode: ecn``) or WRED dropping (``mode: drop``) on every
    egress queue, decided on the instantaneous queue bytes at enqueue.
    ``threshold: K`` is step marking (``kmin = kmax = K``, ``pmax = 1``)."""

    kmin: Optional[ByteCount] = None
    kmax: Optional[ByteCount] = None
    threshold: Optional[ByteCount] = None
    pmax: float = Field(default=1.0, gt=0.0, le=1.0)
    classes: Optional[list[Annotated[int, Field(ge=0, le=7)]]] = None
    mode: Annotated[EcnMode, _one_of(EcnMode)] = "ecn"

    @model_validator(mode="after")
    def _thresholds(self) -> "Ecn":
        if self.threshold is not None:
            if self.kmin is not None or self.kmax is not None:
                raise _issues_error(("threshold", "give either threshold (step marking) or kmin/kmax, not both"))
        elif self.kmin is None or self.kmax is None:
            raise _issues_error(("kmin", "give threshold (step marking) or both kmin and kmax"))
        elif self.kmax < self.kmin:
            raise _issues_error(("kmax", f"must be >= kmin ({units.format_size(self.kmin)})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        kmin = self.threshold if self.threshold is not None else self.kmin
        kmax = self.threshold if self.threshold is not None else self.kmax
        return {"kmin_bytes": kmin, "kmax_bytes": kmax, "pmax": self.pmax, "classes": self.classes, "mode": self.mode}


class Pfc(_Model):
    """Priority flow control (802.1Qbb) of lossless ``classes`` (shared buffer
    only): XOFF at ``xoff`` bytes of a priority group's shared occupancy, or
    dynamically at ``xoff_alpha`` x free shared buffer; XON ``resume_offset``
    below it. ``headroom`` per (port, lossless class) defaults to the formula
    of ``docs/models/pfc.md`` (cable round trip, pipelines, 2 MTU, peer
    response quanta)."""

    classes: list[Annotated[int, Field(ge=0, le=7)]] = Field(min_length=1)
    xoff: Optional[ByteCount] = None
    xoff_alpha: float = 0.125
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


def _expand_device(data: Any) -> Any:
    """Put the named device preset under the switch's explicit settings."""
    if not isinstance(data, dict) or data.get("device") is None:
        return data
    from fabricsim import devices

    name = data["device"]
    if not isinstance(name, str) or name not in devices.names():
        raise _issues_error(("device", unknown_value(name, devices.names())))
    return devices.merge(devices.get(name).switch, data)


class Switch(_Model):
    """Switch parameters: the network-wide default or a per-switch override."""

    device: Optional[str] = None
    forwarding: Annotated[ForwardingMode, _one_of(ForwardingMode)] = "store_and_forward"
    latency: Time = 500_000
    buffer: Buffer = Field(default_factory=Buffer)
    ecn: Optional[Ecn] = None
    scheduler: Annotated[SchedulerKind, _one_of(SchedulerKind)] = "strict"
    drr_quantum: Annotated[list[Size], BeforeValidator(lambda v: v if isinstance(v, list) else [v])] = Field(
        default_factory=lambda: [1500]
    )
    drr_weights: Optional[list[Annotated[float, Field(gt=0)]]] = None
    pfc: Optional[Pfc] = None

    _expand = model_validator(mode="before")(classmethod(lambda cls, data: _expand_device(data)))

    def to_resolved(self) -> dict[str, Any]:
        if self.scheduler == "drr":
            quantum = list(self.drr_quantum)
            if self.drr_weights is not None:
                base = quantum[0]
                quantum = [max(1, round(w * base)) for w in self.drr_weights]
            scheduler: dict[str, Any] = {"kind": "drr", "quantum_bytes": quantum}
        else:
            scheduler = {"kind": "strict"}
        out = {"forwarding": self.forwarding, "latency_ps": self.latency, "buffer": self.buffer.to_resolved()}
        # Defaults (no ECN, strict priority) are left out, as the core assumes them.
        if self.ecn is not None:
            out["ecn"] = self.ecn.to_resolved()
        if scheduler["kind"] != "strict":
            out["scheduler"] = scheduler
        if self.pfc is not None:
            out["pfc"] = self.pfc.to_resolved()
        return out


class Host(_Model):
    """Host (NIC) parameters."""

    latency: Time = 0
    nic_buffer: Size = 1_000_000_000

    def to_resolved(self) -> dict[str, Any]:
        return {"latency_ps": self.latency, "nic_buffer_bytes": self.nic_buffer}


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


class Network(_Model):
    """Network-wide settings.

    ``switch_overrides`` entries are merged over ``switch``: an override only
    needs the settings that differ (``{leaf0: {buffer: {port_size: 4MB}}}``).
    A buffer override that names a different ``model`` replaces the buffer.
    After validation each entry holds the complete merged switch.
    """

    ethernet_overhead: Overhead = 20
    classes: int = Field(default=8, ge=1, le=8)
    switch: Switch = Field(default_factory=Switch)
    host: Host = Field(default_factory=Host)
    switch_overrides: dict[str, Switch] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _merge_overrides(self) -> "Network":
        self.switch_overrides = {
            name: _overlay(self.switch, override) for name, override in self.switch_overrides.items()
        }
        issues = [(f"switch.buffer.{field}", message) for field, message in self.switch.buffer.issues()]
        for name, spec in self.switch_overrides.items():
            path = f"switch_overrides.{name}.buffer"
            issues.extend((f"{path}.{field}", message) for field, message in spec.buffer.issues())
        if issues:
            raise _issues_error(*issues)
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "ethernet_overhead_bytes": self.ethernet_overhead,
            "classes": self.classes,
            "switch": self.switch.to_resolved(),
            "host": self.host.to_resolved(),
            "switch_overrides": {name: spec.to_resolved() for name, spec in self.switch_overrides.items()},
        }


class Link(_Model):
    """Rate, propagation delay and (optional) random loss rate of a link."""

    rate: Rate
    delay: Time
    loss: float = Field(default=0.0, ge=0.0, lt=1.0)

    def to_resolved(self) -> dict[str, Any]:
        return {"rate_bps": self.rate, "delay_ps": self.delay, "loss": self.loss}


class Star(_Model):
    """One switch ``sw0`` with hosts ``h0..h{hosts-1}``."""

    kind: Literal["star"]
    hosts: int = Field(ge=1)
    link: Link

    def to_resolved(self) -> dict[str, Any]:
        return {"kind": self.kind, "hosts": self.hosts, "link": self.link.to_resolved()}


class Dumbbell(_Model):
    """Switches ``sw_left``/``sw_right`` joined by a bottleneck link."""

    kind: Literal["dumbbell"]
    left: int = Field(ge=1)
    right: int = Field(ge=1)
    edge_link: Link
    bottleneck_link: Link

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "left": self.left,
            "right": self.right,
            "edge_link": self.edge_link.to_resolved(),
            "bottleneck_link": self.bottleneck_link.to_resolved(),
        }


def _hosts_per_leaf(value: Any) -> Union[int, list[int]]:
    def is_int(item: Any) -> bool:
        return isinstance(item, int) and not isinstance(item, bool)

    if is_int(value):
        if value < 1:
            raise ValueError(f"must be >= 1 (got {value})")
        return int(value)
    if isinstance(value, list) and value and all(is_int(item) for item in value):
        if any(item < 0 for item in value):
            raise ValueError(f"host counts must be >= 0 (got {value})")
        if sum(value) == 0:
            raise ValueError("at least one leaf must have hosts")
        return list(value)
    raise ValueError(f"expected a host count or a list with one count per leaf, got {_show(value)}")


class LeafSpine(_Model):
    """Two-tier Clos: ``leaf{i}``, ``spine{j}``, hosts ``h{n}`` numbered leaf by leaf.

    ``hosts_per_leaf`` is one count for every leaf or a list with one count per leaf.
    """

    kind: Literal["leaf_spine"]
    leaves: int = Field(ge=1)
    spines: int = Field(ge=1)
    hosts_per_leaf: Annotated[Union[int, list[int]], PlainValidator(_hosts_per_leaf)]
    host_link: Link
    fabric_link: Link
    links_per_spine: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _one_count_per_leaf(self) -> "LeafSpine":
        counts = self.hosts_per_leaf
        if isinstance(counts, list) and len(counts) != self.leaves:
            raise _issues_error(("hosts_per_leaf", f"has {len(counts)} entries but there are {self.leaves} leaves"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "leaves": self.leaves,
            "spines": self.spines,
            "hosts_per_leaf": self.hosts_per_leaf,
            "host_link": self.host_link.to_resolved(),
            "fabric_link": self.fabric_link.to_resolved(),
            "links_per_spine": self.links_per_spine,
        }


class FatTree(_Model):
    """k-ary fat tree: ``core{i}``, ``agg{pod}_{i}``, ``edge{pod}_{i}``, hosts ``h{n}``."""

    kind: Literal["fat_tree"]
    k: int = Field(ge=2)
    link: Link

    @model_validator(mode="after")
    def _even_k(self) -> "FatTree":
        if self.k % 2:
            raise _issues_error(("k", f"must be even (got {self.k})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {"kind": self.kind, "k": self.k, "link": self.link.to_resolved()}


class ExplicitNode(_Model):
    """A named host or switch of an explicit topology."""

    name: str = Field(min_length=1)
    kind: Annotated[NodeKind, _one_of(NodeKind)]

    def to_resolved(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind}


class ExplicitLink(_Model):
    """A link between two named nodes of an explicit topology."""

    a: str = Field(min_length=1)
    b: str = Field(min_length=1)
    rate: Rate
    delay: Time
    loss: float = Field(default=0.0, ge=0.0, lt=1.0)

    def to_resolved(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "rate_bps": self.rate, "delay_ps": self.delay, "loss": self.loss}


class Explicit(_Model):
    """Nodes and links listed one by one."""

    kind: Literal["explicit"]
    nodes: list[ExplicitNode] = Field(min_length=1)
    links: list[ExplicitLink]

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "nodes": [node.to_resolved() for node in self.nodes],
            "links": [link.to_resolved() for link in self.links],
        }


Topology = Annotated[
    Union[Star, Dumbbell, LeafSpine, FatTree, Explicit],
    Field(discriminator="kind"),
    _kind_of(Star, Dumbbell, LeafSpine, FatTree, Explicit),
]


@dataclass(frozen=True)
class TrafficRate:
    """Sending rate of a UDP source: absolute (``bps``) or a ``load`` fraction of its NIC rate."""

    bps: Optional[int] = None
    load: Optional[float] = None

    def __str__(self) -> str:
        if self.bps is not None:
            return units.format_rate(self.bps)
        return units.format_percent(self.load or 0.0)


def _traffic_rate(value: Any) -> TrafficRate:
    if isinstance(value, str) and value.strip().endswith("%"):
        load = units.parse_percent(value)
        if not 0 < load <= 1:
            raise ValueError(f"a load must be > 0% and <= 100% (got {value!r})")
        return TrafficRate(load=load)
    try:
        bps = units.parse_rate(value)
    except ValueError as exc:
        if str(exc).startswith("expected"):
            raise ValueError(
                f"expected a data rate like '10Gbps' or a load like '20%' of the source NIC rate, got {_show(value)}"
            ) from None
        raise
    if bps == 0:
        raise ValueError(f"must be > 0 (got {_show(value)})")
    return TrafficRate(bps=bps)


class _Source(_Model):
    """Fields shared by every traffic source."""

    kind: str
    name: Optional[str] = Field(default=None, min_length=1)
    src: NodeList
    dst: str = Field(min_length=1)
    frame_size: FrameSize = 1500
    start: Time = 0
    class_: int = Field(default=0, ge=0, alias="class")

    def _resolved(self, sending: dict[str, Any], until: dict[str, Any], ecn: bool) -> dict[str, Any]:
        """The resolved entry: the shared fields around the kind's own ``sending``
        (what is sent) and ``until`` (when it stops) fields; ``ecn`` only when set."""
        out = {
            "kind": self.kind,
            "name": self.name,
            "src": list(self.src),
            "dst": self.dst,
            **sending,
            "frame_bytes": self.frame_size,
            "start_ps": self.start,
            **until,
            "class": self.class_,
        }
        if ecn:
            out["ecn"] = True
        return out


class UdpTraffic(_Source):
    """Constant-bit-rate or Poisson UDP frames from each ``src`` host to ``dst``."""

    kind: Literal["udp_cbr", "udp_poisson"]
    rate: Annotated[TrafficRate, PlainValidator(_traffic_rate), PlainSerializer(str, return_type=str)]
    stop: Optional[Time] = None
    max_frames: Optional[int] = Field(default=None, ge=1)
    ecn: bool = False

    @model_validator(mode="after")
    def _stop_after_start(self) -> "UdpTraffic":
        if self.stop is not None and self.stop <= self.start:
            raise _issues_error(
                ("stop", f"must be later than start ({_as_time(self.start)}), got {_as_time(self.stop)}")
            )
        return self

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(
            {"rate_bps": self.rate.bps, "load": self.rate.load},
            {"stop_ps": self.stop, "max_frames": self.max_frames},
            self.ecn,
        )


class Burst(_Source):
    """``frames`` frames queued at once on each ``src`` host at ``start``."""

    kind: Literal["burst"]
    frames: int = Field(ge=1)
    ecn: bool = False

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved({"frames": self.frames}, {}, self.ecn)


class DelayedAck(_Model):
    """Receiver acknowledgment policy."""

    count: int = Field(default=2, ge=1)
    timeout: Time = 40_000_000_000
    quickack: int = Field(default=16, ge=0)


class Tcp(_Model):
    """TCP parameters. Defaults follow Linux: initial window 10, minimum RTO
    200 ms, delayed ACKs every 2 segments or 40 ms after a 16-segment quick-ACK
    start, timestamps (52 B of IP + TCP headers), 6 MiB receive window."""

    cc: Annotated[CongestionControl, _one_of(CongestionControl)] = "newreno"
    mtu: Size = 1500
    header: Overhead = 52
    l2_header: Overhead = 18
    min_frame: Overhead = 64
    init_cwnd: int = Field(default=10, ge=1)
    rwnd: Size = 6 * 1024 * 1024
    min_rto: Time = 200_000_000_000
    initial_rto: Duration = 10**12
    max_rto: Duration = 120 * 10**12
    clock_granularity: Time = 1_000_000_000
    delayed_ack: DelayedAck = Field(default_factory=DelayedAck)
    ecn: bool = False
    dctcp_g: float = Field(default=1 / 16, gt=0, le=1)
    byte_counting: bool = False
    dupack_threshold: int = Field(default=3, ge=1)
    pacing_rate: Optional[Rate] = None

    @model_validator(mode="after")
    def _mss(self) -> "Tcp":
        if self.mtu - self.header < 64:
            raise _issues_error(("mtu", f"leaves {self.mtu - self.header} B of payload after the {self.header} B header"))
        if self.min_rto > self.max_rto:
            raise _issues_error(("min_rto", "must not exceed max_rto"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "cc": self.cc,
            "mtu_bytes": self.mtu,
            "header_bytes": self.header,
            "l2_bytes": self.l2_header,
            "min_frame_bytes": self.min_frame,
            "init_cwnd_segments": self.init_cwnd,
            "rwnd_bytes": self.rwnd,
            "min_rto_ps": self.min_rto,
            "initial_rto_ps": self.initial_rto,
            "max_rto_ps": self.max_rto,
            "clock_granularity_ps": self.clock_granularity,
            "delack_count": self.delayed_ack.count,
            "delack_timeout_ps": self.delayed_ack.timeout,
            "quickack_segments": self.delayed_ack.quickack,
            "ecn": self.ecn,
            "dctcp_g": self.dctcp_g,
            "byte_counting": self.byte_counting,
            "dupack_threshold": self.dupack_threshold,
            "pacing_bps": self.pacing_rate,
        }


class _TcpTraffic(_Model):
    """Fields shared by TCP applications."""

    name: Optional[str] = Field(default=None, min_length=1)
    class_: int = Field(default=0, ge=0, alias="class")
    tcp: Optional[Tcp] = None

    def _resolved(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        """The resolved entry: ``kind``, ``name``, the app's own ``fields``, ``class`` and ``tcp``."""
        return {
            "kind": kind,
            "name": self.name,
            **fields,
            "class": self.class_,
            "tcp": self.tcp.to_resolved() if self.tcp is not None else None,
        }


class TcpBulk(_TcpTraffic):
    """iperf3-like: ``streams`` connections from each ``src`` to ``dst``, each
    sending ``size`` bytes, or sending for ``duration``."""

    kind: Literal["tcp_bulk"]
    src: NodeList
    dst: str = Field(min_length=1)
    streams: int = Field(default=1, ge=1)
    size: Optional[Size] = None
    duration: Optional[Duration] = None
    start: Time = 0

    @model_validator(mode="after")
    def _size_or_duration(self) -> "TcpBulk":
        if self.size is None and self.duration is None:
            raise _issues_error(("size", "give a size per stream (e.g. 10MB) or a duration (e.g. 1s)"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(
            self.kind,
            {
                "src": list(self.src),
                "dst": self.dst,
                "streams": self.streams,
                "bytes": self.size,
                "duration_ps": self.duration,
                "start_ps": self.start,
            },
        )


class TcpIncast(_TcpTraffic):
    """``client`` asks every server for ``response_size`` bytes (``flows_per_server``
    connections each); the next of ``rounds`` rounds starts ``gap`` after the last
    answer of the previous one."""

    kind: Literal["tcp_incast"]
    client: str = Field(min_length=1)
    servers: NodeList
    response_size: Size
    flows_per_server: int = Field(default=1, ge=1)
    rounds: int = Field(default=1, ge=1)
    gap: Time = 0
    start: Time = 0

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(
            self.kind,
            {
                "client": self.client,
                "servers": list(self.servers),
                "response_bytes": self.response_size,
                "flows_per_server": self.flows_per_server,
                "rounds": self.rounds,
                "gap_ps": self.gap,
                "start_ps": self.start,
            },
        )


class TcpFlowItem(_Model):
    """One flow of an explicit list."""

    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)
    size: Size
    start: Time = 0

    def to_resolved(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "bytes": self.size, "start_ps": self.start}


class TcpFlows(_TcpTraffic):
    """An explicit list of TCP flows (``src``, ``dst``, ``size``, ``start``)."""

    kind: Literal["tcp_flows"]
    flows: list[TcpFlowItem] = Field(min_length=1)

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(self.kind, {"flows": [f.to_resolved() for f in self.flows]})


def _load_fraction(value: Any) -> float:
    """An offered load: a percentage (``"60%"``) or a fraction in (0, 1]."""
    if isinstance(value, str):
        fraction = units.parse_percent(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        fraction = float(value)
    else:
        raise ValueError(f"expected a load like '60%', got {_show(value)}")
    if not 0 < fraction <= 1:
        raise ValueError(f"a load must be > 0% and <= 100% (got {_show(value)})")
    return fraction


Load = Annotated[float, PlainValidator(_load_fraction), PlainSerializer(units.format_percent, return_type=str)]
WorkloadPattern = Literal["all_to_all", "many_to_one", "permutation", "explicit"]
Sampling = Literal["linear", "step"]


class WorkloadPair(_Model):
    """A (src, dst) pair of an explicit workload pattern."""

    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)


class Workload(_TcpTraffic):
    """TCP flows with sizes drawn from a CDF and Poisson arrivals at an offered
    ``load``; expanded to an explicit ``tcp_flows`` list when resolved (see
    ``docs/models/workloads.md`` and :mod:`fabricsim.flowgen`)."""

    kind: Literal["workload"]
    cdf: str = Field(min_length=1)
    sampling: Annotated[Sampling, _one_of(Sampling)] = "linear"
    load: Optional[Load] = None
    load_scale: float = Field(default=1.0, gt=0)
    load_on: Optional[str] = Field(default=None, min_length=1)
    pattern: Annotated[WorkloadPattern, _one_of(WorkloadPattern)] = "all_to_all"
    hosts: Optional[NodeList] = None
    requester: Optional[str] = Field(default=None, min_length=1)
    responders: Optional[NodeList] = None
    pairs: Optional[list[WorkloadPair]] = Field(default=None, min_length=1)
    start: Time = 0
    stop: Optional[Time] = None
    max_flows: Optional[int] = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _pattern_fields(self) -> "Workload":
        if self.pattern == "many_to_one" and self.requester is None:
            raise _issues_error(("requester", "required field is missing for pattern many_to_one"))
        if self.pattern == "explicit" and self.pairs is None:
            raise _issues_error(("pairs", "required field is missing for pattern explicit"))
        if self.stop is not None and self.stop <= self.start:
            raise _issues_error(("stop", f"must be later than start ({_as_time(self.start)})"))
        return self


class Dcqcn(_Model):
    """DCQCN (docs/models/rocev2-dcqcn.md). Defaults: DCQCN-paper timing with
    HPCC's increase steps (5 / 50 Mb/s per 25G of NIC rate when unset)."""

    enabled: bool = True
    g: float = Field(default=1 / 256, gt=0, le=1)
    initial_alpha: float = Field(default=1.0, ge=0, le=1)
    alpha_interval: Duration = 55_000_000
    rate_decrease_interval: Time = 50_000_000
    rate_increase_timer: Duration = 55_000_000
    byte_counter: Optional[Size] = None
    fast_recovery_stages: int = Field(default=5, ge=0)
    rate_ai: Optional[Rate] = None
    rate_hai: Optional[Rate] = None
    min_rate: Rate = 100_000_000
    cnp_interval: Time = 50_000_000

    def to_resolved(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "g": self.g,
            "initial_alpha": self.initial_alpha,
            "alpha_interval_ps": self.alpha_interval,
            "rate_decrease_interval_ps": self.rate_decrease_interval,
            "rate_increase_timer_ps": self.rate_increase_timer,
            "byte_counter_bytes": self.byte_counter,
            "fast_recovery_stages": self.fast_recovery_stages,
            "rate_ai_bps": self.rate_ai,
            "rate_hai_bps": self.rate_hai,
            "min_rate_bps": self.min_rate,
            "cnp_interval_ps": self.cnp_interval,
        }


class Roce(_Model):
    """RoCEv2 RC parameters: payload ``mtu``, ``header`` bytes per frame (Eth 14 +
    IP 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4), ACK every ``ack_every`` packets and
    at message ends, ACK/NACK and CNP classes, go-back-N timeout ``rto``."""

    mtu: Size = 1024
    header: Overhead = 62
    ack_every: int = Field(default=1, ge=1)
    ack_class: Optional[int] = Field(default=None, ge=0, le=7)
    cnp_class: int = Field(default=7, ge=0, le=7)
    rto: Duration = 1_000_000_000
    ecn: bool = True
    dcqcn: Dcqcn = Field(default_factory=Dcqcn)

    def to_resolved(self) -> dict[str, Any]:
        return {
            "mtu_bytes": self.mtu,
            "header_bytes": self.header,
            "ack_every": self.ack_every,
            "ack_class": self.ack_class,
            "cnp_class": self.cnp_class,
            "rto_ps": self.rto,
            "ecn": self.ecn,
            "dcqcn": self.dcqcn.to_resolved(),
        }


class RdmaWrite(_Model):
    """RDMA writes over RoCEv2: ``qps`` queue pairs from each ``src`` to ``dst``,
    each writing ``messages`` messages of ``message_size``, at most ``window``
    outstanding (1 = closed loop). An entry's ``roce`` replaces the scenario's."""

    kind: Literal["rdma_write"]
    name: Optional[str] = Field(default=None, min_length=1)
    src: NodeList
    dst: str = Field(min_length=1)
    qps: int = Field(default=1, ge=1)
    messages: int = Field(default=1, ge=1)
    message_size: Size
    window: int = Field(default=1, ge=1)
    start: Time = 0
    class_: int = Field(default=3, ge=0, alias="class")
    roce: Optional[Roce] = None

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "src": list(self.src),
            "dst": self.dst,
            "qps": self.qps,
            "messages": self.messages,
            "message_bytes": self.message_size,
            "window": self.window,
            "start_ps": self.start,
            "class": self.class_,
            "roce": self.roce.to_resolved() if self.roce is not None else None,
        }


def _resolve_source(scenario: "Scenario", index: int, source: Any) -> dict[str, Any]:
    """A traffic entry in resolved form; workloads expand to explicit flow lists."""
    if isinstance(source, Workload):
        from fabricsim.flowgen import expand

        return expand(scenario, index)
    return source.to_resolved()


TRAFFIC_MODELS = (UdpTraffic, Burst, TcpBulk, TcpIncast, TcpFlows, Workload, RdmaWrite)
Traffic = Annotated[
    Union[UdpTraffic, Burst, TcpBulk, TcpIncast, TcpFlows, Workload, RdmaWrite],
    Field(discriminator="kind"),
    _kind_of(*TRAFFIC_MODELS),
]


class FctSettings(_Model):
    """Flow-completion-time statistics (``fabricsim.fct``): only flows started in
    ``[warmup, duration - cooldown]`` count; ``buckets`` are the size-bucket edges."""

    warmup: Time = 0
    cooldown: Time = 0
    buckets: list[Size] = Field(default_factory=lambda: [100_000, 1_000_000, 10_000_000])

    @model_validator(mode="after")
    def _sorted(self) -> "FctSettings":
        if self.buckets != sorted(set(self.buckets)):
            raise _issues_error(("buckets", "edges must be increasing"))
        return self


class Stats(_Model):
    """What to record besides per-flow results."""

    queue_sample_interval: Time = 10_000_000
    sample_hosts: bool = False
    throughput_interval: Time = 1_000_000_000

    def to_resolved(self) -> dict[str, Any]:
        return {
            "queue_sample_interval_ps": self.queue_sample_interval,
            "sample_hosts": self.sample_hosts,
            "throughput_interval_ps": self.throughput_interval,
        }


class Scenario(_Model):
    """A validated scenario. Quantities are held as integers (ps, bit/s, bytes).

    Build one with :func:`load`, :func:`loads` or :func:`from_dict`; those
    also record where it came from (:attr:`source`, :attr:`source_text`,
    :attr:`source_data`, :attr:`overrides`).
    """

    name: str = Field(default="scenario", min_length=1)
    description: Optional[str] = None
    seed: int = Field(default=1, ge=0, le=_U64_MAX)
    duration: Duration
    drain: bool = True
    drain_limit: Duration = 10**12
    network: Network = Field(default_factory=Network)
    topology: Topology
    traffic: list[Traffic] = Field(default_factory=list)
    stats: Stats = Field(default_factory=Stats)
    tcp: Tcp = Field(default_factory=Tcp)
    load: Optional[Load] = None  # default offered load of workload traffic entries
    fct: FctSettings = Field(default_factory=FctSettings)
    roce: Optional[Roce] = None  # defaults of rdma_write traffic (core defaults when unset)

    @model_validator(mode="before")
    @classmethod
    def _merge_tcp_defaults(cls, data: Any) -> Any:
        """A traffic entry's ``tcp`` overrides only the fields it names; the
        rest come from the scenario's ``tcp`` section."""
        if not isinstance(data, dict) or not isinstance(data.get("traffic"), list):
            return data
        base = data.get("tcp") if isinstance(data.get("tcp"), dict) else {}
        traffic = []
        for entry in data["traffic"]:
            if isinstance(entry, dict) and isinstance(entry.get("tcp"), dict):
                merged = copy.deepcopy(base)
                for key, value in entry["tcp"].items():
                    if isinstance(value, dict) and isinstance(merged.get(key), dict):
                        merged[key] = {**merged[key], **value}
                    else:
                        merged[key] = value
                entry = {**entry, "tcp": merged}
            traffic.append(entry)
        return {**data, "traffic": traffic}

    _source: Optional[str] = PrivateAttr(None)
    _source_text: Optional[str] = PrivateAttr(None)
    _source_data: Optional[dict[str, Any]] = PrivateAttr(None)
    _overrides: tuple[str, ...] = PrivateAttr(())

    @model_validator(mode="after")
    def _check_traffic(self) -> "Scenario":
        issues = []
        first_use: dict[str, int] = {}
        for index, source in enumerate(self.traffic):
            if source.name is None:
                source.name = f"{source.kind}{index}"
            if source.name in first_use:
                issues.append(
                    (
                        f"traffic[{index}].name",
                        f"duplicate name {source.name!r} (also traffic[{first_use[source.name]}])",
                    )
                )
            first_use.setdefault(source.name, index)
            if source.class_ >= self.network.classes:
                issues.append(
                    (
                        f"traffic[{index}].class",
                        f"must be < network.classes ({self.network.classes}) (got {source.class_})",
                    )
                )
        if issues:
            raise _issues_error(*issues)
        return self

    @classmethod
    def from_dict(cls, data: dict[str, Any], overrides: Sequence[str] = (), source: Optional[str] = None) -> "Scenario":
        """Same as the module-level :func:`from_dict`."""
        return from_dict(data, overrides, source)

    @property
    def source(self) -> Optional[str]:
        """The file the scenario was read from, if any."""
        return self._source

    @property
    def source_text(self) -> Optional[str]:
        """The YAML text as read, before overrides, if the scenario came from text."""
        return self._source_text

    @property
    def source_data(self) -> Optional[dict[str, Any]]:
        """The document after ``--set`` overrides, before validation and defaults."""
        return copy.deepcopy(self._source_data)

    @property
    def overrides(self) -> tuple[str, ...]:
        """The ``key=value`` overrides applied to the source document."""
        return self._overrides

    def with_seed(self, seed: int) -> "Scenario":
        """A copy of this scenario with another seed."""
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _U64_MAX:
            raise ScenarioError([("seed", f"must be an integer from 0 to 2**64 - 1 (got {_show(seed)})")], self._source)
        return self.model_copy(update={"seed": seed})

    def to_resolved(self) -> dict[str, Any]:
        """The resolved JSON document accepted by ``fabricsim._core.Simulation``."""
        return {
            "name": self.name,
            "seed": self.seed,
            "duration_ps": self.duration,
            "drain": self.drain,
            "drain_limit_ps": self.drain_limit,
            "network": self.network.to_resolved(),
            "topology": self.topology.to_resolved(),
            "traffic": [_resolve_source(self, index, source) for index, source in enumerate(self.traffic)],
            "stats": self.stats.to_resolved(),
            "tcp": self.tcp.to_resolved(),
            **({"roce": self.roce.to_resolved()} if self.roce is not None else {}),
        }

    def to_yaml(self) -> str:
        """The scenario as YAML with every default spelled out, in exact units.

        Loading this text gives a scenario with the same :meth:`to_resolved`.
        """
        header = ["# fabricsim scenario with all defaults filled in"]
        if self._source:
            header.append(f"# source: {self._source}")
        header.extend(f"# --set {override}" for override in self._overrides)
        body = yaml.safe_dump(
            self.model_dump(mode="json", by_alias=True), sort_keys=False, allow_unicode=True, width=100
        )
        return "\n".join(header) + "\n" + body


# --------------------------------------------------------------------------
# Loading


class _StrictLoader(yaml.SafeLoader):
    """Safe YAML loader that rejects duplicate mapping keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: construct_mapping reports it
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse_yaml(text: str, source: Optional[str]) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "syntax error"
        raise ScenarioError([("", f"invalid YAML{where}: {problem}")], source) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([("", f"invalid YAML: {exc}")], source) from None


def _kind_name(value: Any) -> str:
    if value is None:
        return "null"
    return {str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), type(value).__name__)


def _apply_override(document: dict[str, Any], override: str, source: Optional[str]) -> None:
    """Apply one ``dotted.path=value`` override in place."""
    key, sep, raw = override.partition("=")
    key = key.strip()
    label = f"--set {key}" if key else "--set"
    if not sep or not key:
        raise ScenarioError([(label, f"expected KEY=VALUE, got {override!r}")], source)
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError([(label, f"invalid value {raw!r}: {problem}")], source) from None
    parts = re.sub(r"\[(\d+)\]", r".\1", key).split(".")
    if not all(parts):
        raise ScenarioError([(label, "empty component in the key path")], source)
    node: Any = document
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[:depth]) or "the top level"
        if isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if node.get(part) is None:
                    node[part] = {}
                node = node[part]
        elif isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(
                    [(label, f"{where} is a list of {len(node)} entries; {part!r} is not an index in it")], source
                )
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        else:
            raise ScenarioError([(label, f"cannot set {part!r} inside {where}, which is a {_kind_name(node)}")], source)


def _build(
    data: Any,
    *,
    overrides: Sequence[str],
    source: Optional[str],
    text: Optional[str],
    default_name: Optional[str],
) -> Scenario:
    if data is None:
        raise ScenarioError([("", "the scenario is empty")], source)
    if not isinstance(data, dict):
        raise ScenarioError([("", f"expected a mapping of scenario settings, got {_show(data)}")], source)
    document = copy.deepcopy(data)
    for override in overrides:
        _apply_override(document, override, source)
    candidate = document if "name" in document or not default_name else {"name": default_name, **document}
    try:
        scenario = Scenario.model_validate(candidate)
    except ValidationError as exc:
        raise ScenarioError(_issues(exc, candidate), source) from None
    scenario._source = source
    scenario._source_text = text
    scenario._source_data = document
    scenario._overrides = tuple(overrides)
    return scenario


def load(path: Union[str, "os.PathLike[str]"], overrides: Sequence[str] = ()) -> Scenario:
    """Read, override and validate a YAML scenario file.

    ``overrides`` are ``dotted.path=value`` strings (``traffic.0.rate=5Gbps``,
    ``traffic[0].rate=5Gbps`` works too); values are parsed as YAML and
    missing mapping keys are created. Without a ``name`` key the scenario is
    named after the file. Raises :class:`ScenarioError` for any problem,
    including a missing or unreadable file.
    """
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError([("", "file not found")], source) from None
    except UnicodeDecodeError:
        raise ScenarioError([("", "not a UTF-8 text file")], source) from None
    except OSError as exc:
        raise ScenarioError([("", f"cannot read file: {exc.strerror or exc}")], source) from None
    return _build(
        _parse_yaml(text, source), overrides=overrides, source=source, text=text, default_name=Path(source).stem
    )


def loads(text: str, overrides: Sequence[str] = (), source: Optional[str] = None) -> Scenario:
    """Validate a scenario given as YAML text; ``source`` labels error messages."""
    return _build(_parse_yaml(text, source), overrides=overrides, source=source, text=text, default_name=None)


def from_dict(data: dict[str, Any], overrides: Sequence[str] = (), source: Optional[str] = None) -> Scenario:
    """Validate a scenario given as a mapping (it is not modified)."""
    return _build(data, overrides=overrides, source=source, text=None, default_name=None)
