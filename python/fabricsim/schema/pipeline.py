"""The ``pipeline`` of a switch or a host NIC (match-action stages run by pipes
with a packet-rate capacity); a switch's ``arbitration`` between inputs is
:mod:`fabricsim.schema.arbitration` (re-exported here).

A stage is a mapping with a ``kind`` (one of :data:`STAGE_KINDS`), the shared
fields of :class:`_Stage` and its kind's own fields; see
``docs/models/pipeline.md`` and ``docs/models/arbitration.md``.
"""

import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BeforeValidator, Field, PlainSerializer, PlainValidator, model_validator

from fabricsim.schema._base import (
    ByteCount,
    DeferredModel,
    Duration,
    Rate,
    Size,
    Time,
    U64_MAX,
    issues_error,
    kind_of,
    one_of,
    show,
)
from fabricsim.schema.arbitration import Arbitration

__all__ = ["STAGE_KINDS", "Arbitration", "Pipeline", "Stage"]

VNI_MAX = 2**24 - 1
MAX_PACKET_RATE = 10**12
"""Fastest pipe (1 Tpps, a pass per picosecond: the clock's resolution; a
51.2 Tbit/s switch forwards about 76 Gpps of 64-byte frames)."""
_PPS_UNITS = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def _packet_rate(value: Any) -> int:
    """A packet rate: a number of packets per second or a string like ``850Mpps``."""
    if isinstance(value, bool):
        raise ValueError(f"expected a packet rate like '850Mpps', got {show(value)}")
    if isinstance(value, (int, float)):
        number, factor = Decimal(str(value)), 1
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([kKMGT]?)pps\s*", value)
        if not m:
            raise ValueError(f"expected a packet rate like '850Mpps', got {show(value)}")
        try:
            number = Decimal(m.group(1))
        except InvalidOperation:
            raise ValueError(f"expected a packet rate like '850Mpps', got {show(value)}") from None
        factor = _PPS_UNITS[m.group(2)]
    else:
        raise ValueError(f"expected a packet rate like '850Mpps', got {show(value)}")
    pps = number * factor
    if pps != pps.to_integral_value() or pps < 1:
        raise ValueError(f"must be a whole number of packets per second >= 1 (got {show(value)})")
    if pps > MAX_PACKET_RATE:
        raise ValueError(f"must be <= {_packet_rate_text(MAX_PACKET_RATE)} (got {show(value)})")
    return int(pps)


def _packet_rate_text(pps: int) -> str:
    for unit, factor in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if pps % factor == 0 and pps >= factor:
            return f"{pps // factor}{unit}pps"
    return f"{pps}pps"


PacketRate = Annotated[int, PlainValidator(_packet_rate), PlainSerializer(_packet_rate_text, return_type=str)]
"""Packets (passes) per second, written like ``850Mpps``."""

_PREFIX = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:/(\d{1,2}))?$")


def _prefix(value: Any) -> str:
    """An IPv4 prefix ``a.b.c.d/len`` (a bare address is a /32)."""
    if not isinstance(value, str) or not (m := _PREFIX.match(value.strip())):
        raise ValueError(f"expected an IPv4 prefix like '10.0.0.0/24', got {show(value)}")
    octets = [int(x) for x in m.groups()[:4]]
    length = int(m.group(5)) if m.group(5) is not None else 32
    if any(o > 255 for o in octets) or length > 32:
        raise ValueError(f"expected an IPv4 prefix like '10.0.0.0/24', got {show(value)}")
    addr = (octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]
    mask = (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF if length else 0
    if addr & ~mask & 0xFFFFFFFF:
        base = addr & mask
        fixed = ".".join(str((base >> s) & 255) for s in (24, 16, 8, 0))
        raise ValueError(f"{value!r} has bits set past its length (did you mean '{fixed}/{length}'?)")
    return f"{'.'.join(map(str, octets))}/{length}"


Prefix = Annotated[str, PlainValidator(_prefix)]


def _port_match(value: Any) -> list[int]:
    """An L4 port or an inclusive range ``[lo, hi]``."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value, value]
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 65535 for v in value)
        or value[0] > value[1]
    ):
        raise ValueError(f"expected a port 0..65535 or a range [lo, hi], got {show(value)}")
    return value


PortMatch = Annotated[list[int], PlainValidator(_port_match)]
Dscp = Annotated[int, Field(ge=0, le=63)]
ClassIndex = Annotated[int, Field(ge=0, le=7)]
Vni = Annotated[int, Field(ge=0, le=VNI_MAX)]
PortIndex = Annotated[int, Field(ge=0, le=65534)]
Passes = Annotated[float, Field(ge=0, le=1_000_000)]

Direction = Literal["rx", "tx", "both"]
MissAction = Literal["drop", "pass"]
AclAction = Literal["permit", "deny"]


class _Stage(DeferredModel):
    """Fields every stage may carry: ``cost`` in passes (default: the device's
    ``costs`` of the kind, else 0), ``latency`` added to the packets it runs
    on, the ingress ``ports`` it runs on (default all) and, on a NIC, its
    ``direction``."""

    kind: str
    name: Optional[str] = Field(default=None, min_length=1)
    cost: Optional[Passes] = None
    latency: Time = 0
    ports: Optional[list[PortIndex]] = None
    direction: Optional[Annotated[Direction, one_of(Direction)]] = None

    def _resolved(self, own: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.name is not None:
            out["name"] = self.name
        if self.cost is not None:
            out["cost"] = self.cost
        if self.latency:
            out["latency_ps"] = self.latency
        if self.ports is not None:
            out["ports"] = self.ports
        if self.direction is not None:
            out["direction"] = self.direction
        return {**out, **own}


class Parse(_Stage):
    """Recognises VXLAN packets; parsing their inner headers costs ``tunnel_cost`` more passes."""

    kind: Literal["parse"]
    tunnel_cost: Passes = 0.0

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved({"tunnel_cost": self.tunnel_cost})


class VniMatch(_Stage):
    """Passes tunnelled packets whose VNI is in ``vnis``; others take ``miss``."""

    kind: Literal["vni_match"]
    vnis: list[Vni] = Field(min_length=1)
    miss: Annotated[MissAction, one_of(MissAction)] = "drop"

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved({"vnis": self.vnis, "miss": self.miss})


class AclRule(DeferredModel):
    """One ACL rule: match fields (all optional; unset matches anything) and
    its action, with optional DSCP and class rewrites."""

    src: Optional[Prefix] = None
    dst: Optional[Prefix] = None
    proto: Optional[Annotated[int, Field(ge=0, le=255)]] = None
    sport: Optional[PortMatch] = None
    dport: Optional[PortMatch] = None
    dscp: Optional[Dscp] = None
    class_: Optional[ClassIndex] = Field(default=None, alias="class")
    vni: Optional[Vni] = None
    in_ports: Optional[list[PortIndex]] = None
    action: Annotated[AclAction, one_of(AclAction)] = "permit"
    set_dscp: Optional[Dscp] = None
    set_class: Optional[ClassIndex] = None

    def to_resolved(self) -> dict[str, Any]:
        out = {
            "src": self.src,
            "dst": self.dst,
            "proto": self.proto,
            "sport": self.sport,
            "dport": self.dport,
            "dscp": self.dscp,
            "class": self.class_,
            "vni": self.vni,
            "in_ports": self.in_ports,
            "action": self.action,
            "set_dscp": self.set_dscp,
            "set_class": self.set_class,
        }
        return {k: v for k, v in out.items() if v is not None}


class Acl(_Stage):
    """Ordered rules; the first that matches decides; no match takes ``default``.
    Cost: ``cost`` per lookup plus ``cost_per_rule`` per rule examined."""

    kind: Literal["acl"]
    rules: list[AclRule] = Field(default_factory=list)
    default: Annotated[AclAction, one_of(AclAction)] = "permit"
    cost_per_rule: Passes = 0.0

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(
            {
                "rules": [r.to_resolved() for r in self.rules],
                "default": self.default,
                "cost_per_rule": self.cost_per_rule,
            }
        )


class DscpRewrite(_Stage):
    """Sets the DSCP: one ``dscp`` for every packet, or ``by_class`` (one per class)."""

    kind: Literal["dscp_rewrite"]
    dscp: Optional[Dscp] = None
    by_class: Optional[list[Dscp]] = None

    @model_validator(mode="after")
    def _one_of_two(self) -> "DscpRewrite":
        if (self.dscp is None) == (self.by_class is None):
            raise issues_error(("dscp", "give exactly one of dscp and by_class"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved({"dscp": self.dscp, "by_class": self.by_class})


LpmField = Literal["dst", "src"]


class Lpm(_Stage):
    """Longest-prefix match of the inner ``field`` address; no match takes ``miss``."""

    kind: Literal["lpm"]
    prefixes: list[Prefix] = Field(min_length=1)
    field: Annotated[LpmField, one_of(LpmField)] = "dst"
    miss: Annotated[MissAction, one_of(MissAction)] = "drop"

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved({"prefixes": self.prefixes, "field": self.field, "miss": self.miss})


class MacRewrite(_Stage):
    """Rewrites the inner destination MAC (costs and counts)."""

    kind: Literal["mac_rewrite"]

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved({})


FullPolicy = Literal["drop", "evict_lru", "early_drop"]
_SECOND = 1_000_000_000_000


class Conntrack(_Stage):
    """Connection table of ``table_size`` entries: insert on a connection's first
    packet (``insert_cost`` passes more), lookup after, idle timeouts (Linux
    netfilter defaults), ``full_policy`` when full."""

    kind: Literal["conntrack"]
    table_size: int = Field(ge=1, le=2**32 - 2)
    full_policy: Annotated[FullPolicy, one_of(FullPolicy)] = "drop"
    insert_cost: Passes = 0.0
    tcp_unreplied_timeout: Duration = 120 * _SECOND
    tcp_replied_timeout: Duration = 432_000 * _SECOND
    udp_unreplied_timeout: Duration = 30 * _SECOND
    udp_replied_timeout: Duration = 120 * _SECOND

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(
            {
                "table_size": self.table_size,
                "full_policy": self.full_policy,
                "insert_cost": self.insert_cost,
                "tcp_unreplied_timeout_ps": self.tcp_unreplied_timeout,
                "tcp_replied_timeout_ps": self.tcp_replied_timeout,
                "udp_unreplied_timeout_ps": self.udp_unreplied_timeout,
                "udp_replied_timeout_ps": self.udp_replied_timeout,
            }
        )


class ColorAction(DeferredModel):
    """What a meter does with packets of one colour."""

    drop: bool = False
    set_dscp: Optional[Dscp] = None
    set_class: Optional[ClassIndex] = None


def _color_action(value: Any) -> Any:
    if value == "pass":
        return ColorAction()
    if value == "drop":
        return ColorAction(drop=True)
    if isinstance(value, str):
        raise ValueError(f"expected pass, drop or a mapping {{drop, set_dscp, set_class}}, got {show(value)}")
    return value


ColorActionField = Annotated[ColorAction, BeforeValidator(_color_action)]
MeterMode = Literal["srtcm", "trtcm"]
MeterScope = Literal["stage", "flow", "port"]


class Meter(_Stage):
    """srTCM (RFC 2697: ``cir``, ``cbs``, ``ebs``) or trTCM (RFC 2698: ``cir``,
    ``cbs``, ``pir``, ``pbs``) per stage, flow or port, with an action per colour."""

    kind: Literal["meter"]
    mode: Annotated[MeterMode, one_of(MeterMode)]
    cir: Rate
    cbs: ByteCount
    ebs: Optional[ByteCount] = None
    pir: Optional[Rate] = None
    pbs: Optional[Size] = None
    color_aware: bool = False
    per: Annotated[MeterScope, one_of(MeterScope)] = "stage"
    green: ColorActionField = Field(default_factory=ColorAction)
    yellow: ColorActionField = Field(default_factory=ColorAction)
    red: ColorActionField = Field(default_factory=lambda: ColorAction(drop=True))

    @model_validator(mode="after")
    def _rfc_parameters(self) -> "Meter":
        if self.mode == "srtcm":
            if self.pir is not None or self.pbs is not None:
                raise issues_error(("pir", "srtcm takes cir, cbs and ebs (pir and pbs belong to trtcm)"))
            if self.ebs is None:
                raise issues_error(("ebs", "required field is missing for mode srtcm"))
            if self.cbs == 0 and self.ebs == 0:
                raise issues_error(("cbs", "cbs and ebs cannot both be 0 (RFC 2697 section 2)"))
        else:
            if self.ebs is not None:
                raise issues_error(("ebs", "trtcm takes cir, cbs, pir and pbs (ebs belongs to srtcm)"))
            if self.pir is None or self.pbs is None:
                raise issues_error(("pir", "trtcm needs pir and pbs"))
            if self.pir < self.cir:
                raise issues_error(("pir", "must be >= cir (RFC 2698 section 2)"))
            if self.cbs == 0:
                raise issues_error(("cbs", "must be > 0 for trtcm (RFC 2698 section 2)"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        def action(a: ColorAction) -> dict[str, Any]:
            return {"drop": a.drop, "set_dscp": a.set_dscp, "set_class": a.set_class}

        return self._resolved(
            {
                "mode": self.mode,
                "cir_bps": self.cir,
                "cbs_bytes": self.cbs,
                "ebs_bytes": self.ebs,
                "pir_bps": self.pir,
                "pbs_bytes": self.pbs,
                "color_aware": self.color_aware,
                "per": self.per,
                "green": action(self.green),
                "yellow": action(self.yellow),
                "red": action(self.red),
            }
        )


Outer = Literal["ipv4", "ipv6"]


class VxlanEncap(_Stage):
    """Adds the VXLAN outer headers (50 B over IPv4, 70 B over IPv6, +4 B with ``outer_vlan``)."""

    kind: Literal["vxlan_encap"]
    vni: Vni
    outer: Annotated[Outer, one_of(Outer)] = "ipv4"
    outer_vlan: bool = False

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved({"vni": self.vni, "outer": self.outer, "outer_vlan": self.outer_vlan})


class VxlanDecap(_Stage):
    """Removes the VXLAN outer headers (of any VNI, or only ``vni``)."""

    kind: Literal["vxlan_decap"]
    vni: Optional[Vni] = None

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved({"vni": self.vni})


STAGE_MODELS = (Parse, VniMatch, Acl, DscpRewrite, Lpm, MacRewrite, Conntrack, Meter, VxlanEncap, VxlanDecap)
STAGE_KINDS = tuple(m.model_fields["kind"].annotation.__args__[0] for m in STAGE_MODELS)
StageKind = Literal[
    "parse",
    "vni_match",
    "acl",
    "dscp_rewrite",
    "lpm",
    "mac_rewrite",
    "conntrack",
    "meter",
    "vxlan_encap",
    "vxlan_decap",
]

Stage = Annotated[
    Union[Parse, VniMatch, Acl, DscpRewrite, Lpm, MacRewrite, Conntrack, Meter, VxlanEncap, VxlanDecap],
    Field(discriminator="kind"),
    kind_of(*STAGE_MODELS),
]


class Pipeline(DeferredModel):
    """Match-action pipeline: ``stages`` run by ``pipes`` pipes (ports split in
    equal blocks, or ``port_pipe``), each issuing ``rate`` passes per second; a
    packet costs ``base_cost`` plus its stages' costs. Waiting packets queue per
    port (``queue_packets``, ``queue_size``) and the pipe serves the ports in turn."""

    pipes: int = Field(default=1, ge=1, le=65535)
    port_pipe: Optional[list[Annotated[int, Field(ge=0, le=65535)]]] = None
    rate: PacketRate
    base_cost: Passes = 1.0
    latency: Time = 0
    queue_packets: Optional[int] = Field(default=1024, ge=1, le=U64_MAX)
    queue_size: Optional[Size] = None
    costs: dict[Annotated[StageKind, one_of(StageKind)], Passes] = Field(default_factory=dict)
    stages: list[Stage] = Field(default_factory=list)

    @model_validator(mode="after")
    def _pipes(self) -> "Pipeline":
        if self.port_pipe is not None:
            for i, p in enumerate(self.port_pipe):
                if p >= self.pipes:
                    raise issues_error((f"port_pipe[{i}]", f"pipe {p} does not exist (pipes are 0..{self.pipes - 1})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "pipes": self.pipes,
            "port_pipe": self.port_pipe,
            "rate_pps": self.rate,
            "base_cost": self.base_cost,
            "latency_ps": self.latency,
            "queue_packets": self.queue_packets,
            "queue_bytes": self.queue_size,
            "costs": dict(self.costs),
            "stages": [s.to_resolved() for s in self.stages],
        }
