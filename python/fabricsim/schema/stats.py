"""What a run records and how it is summarised: ``stats`` (sampling of queues and
throughput, packet capture taps, passed to the core) and ``fct``
(flow-completion-time statistics, computed in Python by
:mod:`fabricsim.outputs.fct`)."""

import re
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, model_validator

from fabricsim import units
from fabricsim.schema._base import (
    _SIZE_TEXT,
    DeferredModel,
    Duration,
    Model,
    Size,
    Time,
    _size_schema,
    deferred,
    issues_error,
    quantity,
)

__all__ = ["FctSettings", "PacketLatency", "PcapTap", "Stats", "TcpTrace"]

#: The largest ``max_packets`` of a tap (the core holds each captured frame until the run ends).
MAX_CAPTURED = 10_000_000
#: The largest ``stats.packet_latency.max_packets`` (the core preallocates a row for each).
MAX_TRACED = 1_000_000
#: The largest ``stats.tcp_trace.max_rows`` (a row takes ~150 B in the core until the run ends).
MAX_TCP_TRACE_ROWS = 20_000_000
#: The largest snap length (Wireshark's own limit, 256 KiB).
MAX_SNAPLEN = 262_144
#: The default snap length: every header the captures synthesize (outer Ethernet, IPv6
#: and UDP of VXLAN, the inner Ethernet, IPv4 and a 60 B TCP header are 164 B) with room;
#: the payload bytes are zeros, so keeping them only makes the file larger.
DEFAULT_SNAPLEN = 256

SnapLength = Annotated[
    int,
    quantity(units.parse_size, units.format_size, 1, MAX_SNAPLEN),
    _SIZE_TEXT,
    _size_schema(1, MAX_SNAPLEN),
]
"""Bytes of a captured frame kept in the file: 1 to 256 KiB."""


class PcapTap(DeferredModel):
    """A packet capture tap: the frames that ``port`` of ``node`` (every port of
    it when ``port`` is absent) transmits, receives or both, written to
    ``pcap/<name>.pcapng`` (or ``.pcap``) with synthesized headers
    (:mod:`fabricsim.outputs.pcap`)."""

    node: str
    port: Optional[int] = Field(default=None, ge=0, le=65534)
    direction: Literal["tx", "rx", "both"] = "both"
    #: Bytes of each frame kept in the file (the frame's length is recorded whole).
    snaplen: SnapLength = DEFAULT_SNAPLEN
    #: Frames recorded at most; later ones are counted in ``capture_taps.missed``.
    max_packets: int = Field(default=1_000_000, ge=1, le=MAX_CAPTURED)
    format: Literal["pcapng", "pcap"] = "pcapng"
    #: File name without its extension; default ``<node>[-p<port>][-<direction>]``.
    name: Optional[str] = Field(default=None, min_length=1, max_length=100)

    @model_validator(mode="after")
    def _plain_name(self) -> "PcapTap":
        if self.name is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+", self.name):
            raise issues_error(("name", "letters, digits, '_', '.' and '-' only (it names a file)"))
        return self

    def file_stem(self) -> str:
        """The file name without its extension."""
        if self.name is not None:
            return self.name
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", self.node)
        if self.port is not None:
            stem += f"-p{self.port}"
        if self.direction != "both":
            stem += f"-{self.direction}"
        return stem

    def to_resolved(self) -> dict[str, Any]:
        return {
            "node": self.node,
            **({"port": self.port} if self.port is not None else {}),
            "direction": self.direction,
            "snaplen": self.snaplen,
            "max_packets": self.max_packets,
        }


class PacketLatency(DeferredModel):
    """Per-packet latency breakdown (the ``packet_latency`` table): for the first ``max_packets``
    packets delivered of the traffic entries named in ``flows`` (every entry when absent), the host
    datapath's seven components and the rest (``fabric_ps``). Off by default."""

    max_packets: int = Field(default=10_000, ge=1, le=MAX_TRACED)
    #: Traffic entry names (``traffic[].name``); every entry when absent.
    flows: Optional[list[Annotated[str, Field(min_length=1)]]] = Field(default=None, min_length=1)

    def to_resolved(self) -> dict[str, Any]:
        return {"max_packets": self.max_packets, **({"flows": list(self.flows)} if self.flows else {})}


class TcpTrace(DeferredModel):
    """Per-flow TCP sender state over time (the ``tcp_trace`` table), as Linux's ``tcp:tcp_probe``
    tracepoint or ``ss -tin`` show it: a row per ACK each traced sender processes (``every_ack``,
    the default) or at most one per flow per ``interval``, plus a row at each retransmission
    timeout and at each entry into and exit from fast recovery. Off by default."""

    #: Traffic entry names (``traffic[].name``) or flow ids; every TCP flow when absent.
    flows: Optional[list[Union[Annotated[int, Field(ge=0, lt=2**32)], Annotated[str, Field(min_length=1)]]]] = (
        Field(default=None, min_length=1)
    )
    #: A row at every ACK; ``false`` thins the ACK rows to one per ``interval``.
    every_ack: Optional[bool] = None
    #: At most one ACK row per flow per interval (the first ACK at or after it); implies ``every_ack: false``.
    interval: Optional[Duration] = None
    #: Rows kept at most; later ones are counted in the summary's ``tcp_trace_missed``.
    max_rows: int = Field(default=1_000_000, ge=1, le=MAX_TCP_TRACE_ROWS)

    @model_validator(mode="after")
    def _thinning(self) -> "TcpTrace":
        if self.interval is not None and self.every_ack:
            raise issues_error(("interval", "give either every_ack: true or an interval, not both"))
        if self.interval is None and self.every_ack is False:
            raise issues_error(("interval", "required when every_ack is false (the thinning interval, like '10us')"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            **({"flows": list(self.flows)} if self.flows else {}),
            **({"interval_ps": self.interval} if self.interval is not None else {}),
            "max_rows": self.max_rows,
        }


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
    #: Packet capture taps (none by default: capturing costs nothing when off).
    pcap: list[deferred(PcapTap)] = Field(default_factory=list)
    #: Per-packet latency breakdown (off by default).
    packet_latency: Optional[deferred(PacketLatency)] = None
    #: Per-flow TCP sender state over time (off by default).
    tcp_trace: Optional[deferred(TcpTrace)] = None

    @model_validator(mode="after")
    def _distinct_files(self) -> "Stats":
        seen: dict[str, int] = {}
        for i, tap in enumerate(self.pcap):
            stem = tap.file_stem()
            if stem in seen:
                raise issues_error(
                    (f"pcap.{i}.name", f"file name '{stem}' is already used by pcap.{seen[stem]}; give a distinct name")
                )
            seen[stem] = i
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "queue_sample_interval_ps": self.queue_sample_interval,
            "sample_hosts": self.sample_hosts,
            "throughput_interval_ps": self.throughput_interval,
            **({"power_interval_ps": self.power_interval} if self.power_interval != 1_000_000_000 else {}),
            "cpu_interval_ps": self.cpu_interval,
            **({"pcap": [tap.to_resolved() for tap in self.pcap]} if self.pcap else {}),
            **({"packet_latency": self.packet_latency.to_resolved()} if self.packet_latency else {}),
            **({"tcp_trace": self.tcp_trace.to_resolved()} if self.tcp_trace else {}),
        }
