"""The ``traffic`` section: UDP sources, bursts, TCP applications, workloads and RDMA writes.

A new kind is a model with a ``kind: Literal[...]`` field, a ``name`` and a
``class_``, and a ``to_resolved()``, added to :data:`TRAFFIC_MODELS` and the
:data:`Traffic` union. ``workload`` entries are expanded into explicit flow
lists when the whole scenario is resolved
(:meth:`fabricsim.schema.Scenario.to_resolved`).
"""

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, PlainSerializer, PlainValidator, WithJsonSchema, model_validator

from fabricsim import units
from fabricsim.schema._base import (
    MAX_RATE,
    PERCENT_PATTERN,
    RATE_PATTERN,
    U32_MAX,
    U64_MAX,
    Count32,
    Duration,
    FrameSize,
    Load,
    Model,
    NodeList,
    Size,
    Size32,
    Time,
    as_time,
    issues_error,
    kind_of,
    one_of,
    show,
)
from fabricsim.schema.transports import Roce, Tcp

__all__ = [
    "TRAFFIC_MODELS",
    "Burst",
    "Iperf3",
    "PingPong",
    "LoadBasis",
    "RdmaWrite",
    "TcpBulk",
    "TcpFlowItem",
    "TcpFlows",
    "TcpIncast",
    "Traffic",
    "TrafficRate",
    "UdpTraffic",
    "Workload",
    "WorkloadPair",
]


MAX_FLOWS = 1 << 22
"""Flows a scenario may hold in all (the core's limit, docs/scenarios.md "Limits")."""


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
                f"expected a data rate like '10Gbps' or a load like '20%' of the source NIC rate, got {show(value)}"
            ) from None
        raise
    if bps == 0:
        raise ValueError(f"must be > 0 (got {show(value)})")
    if bps > MAX_RATE:
        raise ValueError(f"must be <= {units.format_rate(MAX_RATE)} (got {show(value)})")
    return TrafficRate(bps=bps)


class _Source(Model):
    """Fields shared by every traffic source."""

    kind: str
    name: Optional[str] = Field(default=None, min_length=1)
    src: NodeList
    dst: str = Field(min_length=1)
    frame_size: FrameSize = 1500
    start: Time = 0
    class_: int = Field(default=0, ge=0, le=7, alias="class")

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


class _Datagrams(_Source):
    """UDP sources: the DSCP of their packets, the destination port that
    match-action stages see (default 5001), and a random ``start_jitter``
    (each source starts up to that much after ``start``, from its own random
    stream: traffic generators' ports are not phase-locked)."""

    dscp: int = Field(default=0, ge=0, le=63)
    dst_port: Optional[int] = Field(default=None, ge=0, le=65535)
    start_jitter: Time = 0

    def _marking(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.start_jitter:
            out["start_jitter_ps"] = self.start_jitter
        if self.dscp:
            out["dscp"] = self.dscp
        if self.dst_port is not None:
            out["dst_port"] = self.dst_port
        return out


Replication = Literal["native", "unicast"]


class UdpTraffic(_Datagrams):
    """Constant-bit-rate or Poisson UDP frames from each ``src`` host to ``dst``,
    or to the multicast ``group`` (``replication: native`` or ``unicast``; the
    rate is the group's stream rate, each member receives it)."""

    kind: Literal["udp_cbr", "udp_poisson"]
    dst: Optional[str] = Field(default=None, min_length=1)  # type: ignore[assignment]
    group: Optional[str] = Field(default=None, min_length=1)
    replication: Annotated[Replication, one_of(Replication)] = "native"
    rate: Annotated[
        TrafficRate,
        PlainValidator(_traffic_rate),
        PlainSerializer(str, return_type=str),
        WithJsonSchema(
            {
                "description": "a data rate like '10Gbps', or a load like '20%' of the source NIC rate",
                "anyOf": [{"type": "string", "pattern": RATE_PATTERN}, {"type": "string", "pattern": PERCENT_PATTERN},
                          {"type": "integer", "minimum": 1, "maximum": MAX_RATE}],
            }
        ),
    ]
    stop: Optional[Time] = None
    max_frames: Optional[int] = Field(default=None, ge=1, le=U64_MAX)
    ecn: bool = False

    @model_validator(mode="after")
    def _stop_after_start(self) -> "UdpTraffic":
        if self.stop is not None and self.stop <= self.start:
            raise issues_error(
                ("stop", f"must be later than start ({as_time(self.start)}), got {as_time(self.stop)}")
            )
        if (self.dst is None) == (self.group is None):
            raise issues_error(("dst", "give either dst (a host) or group (a multicast group), not both"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        out = {
            **self._resolved(
                {"rate_bps": self.rate.bps, "load": self.rate.load},
                {"stop_ps": self.stop, "max_frames": self.max_frames},
                self.ecn,
            ),
            **self._marking(),
        }
        if self.group is not None:
            out["dst"] = ""
            out["group"] = self.group
            out["replication"] = self.replication
        return out


class Burst(_Datagrams):
    """``frames`` frames queued at once on each ``src`` host at ``start``."""

    kind: Literal["burst"]
    frames: int = Field(ge=1, le=U64_MAX)
    ecn: bool = False

    def to_resolved(self) -> dict[str, Any]:
        return {**self._resolved({"frames": self.frames}, {}, self.ecn), **self._marking()}


class _TcpTraffic(Model):
    """Fields shared by TCP applications."""

    name: Optional[str] = Field(default=None, min_length=1)
    class_: int = Field(default=0, ge=0, le=7, alias="class")
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
    streams: Count32 = 1
    size: Optional[Size] = None
    duration: Optional[Duration] = None
    start: Time = 0

    @model_validator(mode="after")
    def _size_or_duration(self) -> "TcpBulk":
        if self.size is None and self.duration is None:
            raise issues_error(("size", "give a size per stream (e.g. 10MB) or a duration (e.g. 1s)"))
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
    flows_per_server: Count32 = 1
    rounds: Count32 = 1
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


class TcpFlowItem(Model):
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


WorkloadPattern = Literal["all_to_all", "many_to_one", "permutation", "explicit"]
Sampling = Literal["linear", "step"]
LoadBasis = Literal["wire", "payload"]


class WorkloadPair(Model):
    """A (src, dst) pair of an explicit workload pattern."""

    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)


class Workload(_TcpTraffic):
    """TCP flows with sizes drawn from a CDF and Poisson arrivals at an offered
    ``load``; expanded to an explicit ``tcp_flows`` list when resolved (see
    ``docs/models/workloads.md`` and :mod:`fabricsim.workloads.flowgen`)."""

    kind: Literal["workload"]
    cdf: str = Field(min_length=1)
    sampling: Annotated[Sampling, one_of(Sampling)] = "linear"
    load: Optional[Load] = None
    load_scale: float = Field(default=1.0, gt=0)
    load_basis: Optional[Annotated[LoadBasis, one_of(LoadBasis)]] = None
    load_on: Optional[str] = Field(default=None, min_length=1)
    pattern: Annotated[WorkloadPattern, one_of(WorkloadPattern)] = "all_to_all"
    hosts: Optional[NodeList] = None
    requester: Optional[str] = Field(default=None, min_length=1)
    responders: Optional[NodeList] = None
    pairs: Optional[list[WorkloadPair]] = Field(default=None, min_length=1)
    start: Time = 0
    stop: Optional[Time] = None
    max_flows: Optional[int] = Field(default=None, ge=1, le=MAX_FLOWS)

    @model_validator(mode="after")
    def _pattern_fields(self) -> "Workload":
        if self.pattern == "many_to_one" and self.requester is None:
            raise issues_error(("requester", "required field is missing for pattern many_to_one"))
        if self.pattern == "explicit" and self.pairs is None:
            raise issues_error(("pairs", "required field is missing for pattern explicit"))
        if self.stop is not None and self.stop <= self.start:
            raise issues_error(("stop", f"must be later than start ({as_time(self.start)})"))
        return self


class RdmaWrite(Model):
    """RDMA writes over RoCEv2: ``qps`` queue pairs from each ``src`` to ``dst``,
    each writing ``messages`` messages of ``message_size``, at most ``window``
    outstanding (1 = closed loop). An entry's ``roce`` replaces the scenario's."""

    kind: Literal["rdma_write"]
    name: Optional[str] = Field(default=None, min_length=1)
    src: NodeList
    dst: str = Field(min_length=1)
    qps: Count32 = 1
    messages: Count32 = 1
    message_size: Size
    window: Count32 = 1
    start: Time = 0
    class_: int = Field(default=3, ge=0, le=7, alias="class")
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


class Iperf3(_TcpTraffic):
    """iperf3-like test: ``instances`` TCP streams from ``src`` to ``dst`` for
    ``duration``; instance ``i`` runs on core ``i mod cores`` at both ends
    (``pin``) when hosts have a CPU model. The ``iperf3`` table reports each
    stream's Gbps and data packets per second over ``[start + omit, start + duration]``."""

    kind: Literal["iperf3"]
    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)
    instances: int = Field(default=1, ge=1, le=U32_MAX)
    duration: Duration
    omit: Time = 0
    start: Time = 0
    pin: bool = True

    @model_validator(mode="after")
    def _omit(self) -> "Iperf3":
        if self.omit >= self.duration:
            raise issues_error(("omit", "must be shorter than the duration"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(
            self.kind,
            {
                "src": self.src,
                "dst": self.dst,
                "instances": self.instances,
                "duration_ps": self.duration,
                "omit_ps": self.omit,
                "start_ps": self.start,
                "pin": self.pin,
            },
        )


PingPongProtocol = Literal["udp", "tcp"]


class PingPong(Model):
    """sockperf-like ping-pong: ``src`` sends a ``message_size`` message to
    ``dst``, which answers at once; one message outstanding, for ``messages``
    messages or ``duration``. The ``ping_pong`` table reports one-way latency
    (half the round trip) percentiles. A UDP reply missing after ``timeout``
    counts the message lost. ``protocol: tcp`` runs netperf TCP_RR-like over
    one TCP connection (the scenario's ``tcp`` settings): each reply carries the
    ACK of its request; no message is lost, so ``timeout`` does not apply."""

    kind: Literal["ping_pong"]
    name: Optional[str] = Field(default=None, min_length=1)
    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)
    protocol: Annotated[PingPongProtocol, one_of(PingPongProtocol)] = "udp"
    message_size: Size32
    messages: Optional[int] = Field(default=None, ge=1, le=U64_MAX)
    duration: Optional[Duration] = None
    start: Time = 0
    timeout: Duration = 10**12
    gap: Time = 0
    core: int = Field(default=0, ge=0, le=U32_MAX)
    class_: int = Field(default=0, ge=0, le=7, alias="class")

    @model_validator(mode="after")
    def _count_or_duration(self) -> "PingPong":
        if self.messages is None and self.duration is None:
            raise issues_error(("messages", "give a number of messages (e.g. 10000) or a duration (e.g. 10ms)"))
        if self.protocol == "udp" and self.message_size > 9170:
            raise issues_error(("message_size", "a UDP message must be 1..9170 bytes (one datagram in a 9216 B "
                                                f"jumbo frame; got {self.message_size})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "src": self.src,
            "dst": self.dst,
            "protocol": self.protocol,
            "message_bytes": self.message_size,
            "messages": self.messages,
            "duration_ps": self.duration,
            "start_ps": self.start,
            "timeout_ps": self.timeout,
            "gap_ps": self.gap,
            "core": self.core,
            "class": self.class_,
        }


TRAFFIC_MODELS = (UdpTraffic, Burst, TcpBulk, TcpIncast, TcpFlows, Workload, RdmaWrite, Iperf3, PingPong)
Traffic = Annotated[
    Union[UdpTraffic, Burst, TcpBulk, TcpIncast, TcpFlows, Workload, RdmaWrite, Iperf3, PingPong],
    Field(discriminator="kind"),
    kind_of(*TRAFFIC_MODELS),
]
