"""Transport parameters: TCP (``tcp``, and a TCP traffic entry's ``tcp``) and RoCEv2 with DCQCN (``roce``)."""

from typing import Annotated, Any, Literal, Optional

from pydantic import BeforeValidator, Field, PlainSerializer, PlainValidator, WithJsonSchema, model_validator

from fabricsim import units
from fabricsim.errors import unknown_value
from fabricsim.schema import extensions
from fabricsim.schema._base import (
    U32_MAX,
    Count32,
    Duration,
    HeaderSize,
    DeferredModel,
    Model,
    Overhead32,
    PacketSize,
    Rate,
    Size,
    Time,
    issues_error,
    one_of,
    show,
)

__all__ = ["Dcqcn", "DelayedAck", "ReceiverApp", "Roce", "Tcp", "Wakeup"]

CongestionControl = Literal["newreno", "cubic", "dctcp", "htcp"]
TcpProfileName = Literal["linux", "rfc", "linux-4.19", "linux-3.10"]
#: How dynamic right-sizing grows the receive buffer, by the Linux release whose rule it
#: is: ``linux-6.18`` (``tcp_rcvbuf_grow`` with its growth term), ``linux-6.16`` (6.16 and
#: 6.17 as released: twice the bytes read), ``linux-4.19`` (4.19 to 6.15: with a 16-segment cushion).
RcvbufGrowth = Literal["linux-6.18", "linux-6.16", "linux-4.19"]
HystartKind = Literal["off", "classic", "hystart++"]
CubicFlavor = Literal["linux", "rfc9438"]
RtoFormula = Literal["linux", "rfc6298"]
SsthreshFrom = Literal["flight", "pipe", "cwnd"]
PacingMode = Literal["off", "fixed", "internal", "fq"]
WakeupKind = Literal["constant", "exponential", "empirical"]


def _cc_name(value: Any) -> Any:
    """``tcp.cc``: a built-in controller, or one registered with the core (``fabricsim.extensions``)."""
    if isinstance(value, str) and value in BUILT_IN_CC:
        return value
    from fabricsim import extensions

    names = extensions.cc_names()
    if not isinstance(value, str) or value not in names:
        raise ValueError(unknown_value(value, names))
    return value


BUILT_IN_CC = ("newreno", "cubic", "dctcp", "htcp")
CcName = Annotated[
    str,
    BeforeValidator(_cc_name),
    WithJsonSchema(
        {
            "anyOf": [
                {"enum": list(BUILT_IN_CC)},
                {"type": "string", "description": "a registered controller (fabricsim.extensions.registered_cc())"},
            ]
        }
    ),
]


def _ratio(value: Any) -> float:
    """A ratio written as a percentage (``"120%"``) or a positive fraction."""
    if isinstance(value, str):
        fraction = units.parse_percent(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        fraction = float(value)
    else:
        raise ValueError(f"expected a percentage like '120%', got {show(value)}")
    if not fraction > 0:
        raise ValueError(f"must be > 0% (got {show(value)})")
    return fraction


Ratio = Annotated[
    float,
    PlainValidator(_ratio),
    PlainSerializer(units.format_percent, return_type=str),
    WithJsonSchema(
        {
            "anyOf": [{"type": "string", "pattern": "%\\s*$"}, {"type": "number", "exclusiveMinimum": 0}],
            "description": "a percentage like '120%', or a fraction",
        }
    ),
]
"""A ratio such as a pacing ratio, written like ``120%``."""


def _three_sizes(value: Any) -> list[int]:
    """``tcp_rmem``/``tcp_wmem``: min, default and max, sizes with units."""
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list) or len(value) != 3:
        raise ValueError(f"expected [min, default, max] (three sizes), got {show(value)}")
    sizes = []
    for item in value:
        if isinstance(item, bool):
            raise ValueError(f"expected a size, got {show(item)}")
        sizes.append(item if isinstance(item, int) else units.parse_size(item))
    lo, default, hi = sizes
    if not 0 < lo <= default <= hi:
        raise ValueError(f"needs 0 < min <= default <= max, got {show(value)}")
    return sizes


BufferSizes = Annotated[
    list[int],
    PlainValidator(_three_sizes),
    PlainSerializer(lambda v: [units.format_size(x) for x in v]),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string"},
                {
                    "type": "array",
                    "minItems": 3,
                    "maxItems": 3,
                    "items": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 1}]},
                },
            ],
            "description": "min, default and max sizes, like [4KiB, 128KiB, 6MiB] or '4096 131072 6291456'",
        }
    ),
]
"""Three sizes: min, default, max (as the ``tcp_rmem`` and ``tcp_wmem`` sysctls)."""

#: Defaults that depend on ``tcp.profile`` (the core holds the same table,
#: ``transport/tcp/config.rs``). ``hystart`` is ``classic`` only for CUBIC;
#: ``dsack``, ``rack``, ``tlp`` and ``prr`` default to off when ``sack`` is off.
TCP_PROFILES: dict[str, dict[str, Any]] = {
    "linux": {
        "cc": "cubic",
        "byte_counting": True,
        "sack": True,
        "dsack": True,
        "rack": True,
        "rack_rtt_in_ack_order": True,
        "tlp": True,
        "prr": True,
        "limited_transmit": True,
        "hystart": "classic",
        "cubic_flavor": "linux",
        "rto_formula": "linux",
        "ssthresh_from": "cwnd",
        "cwnd_validation": True,
        "loss_timer_slack": 2_000_000_000,
        "gso_max_size": 65_536,
        "tsq": True,
        "wmem": [4096, 16_384, 4_194_304],
        "rcv_autotune": True,
        "sack_compression": 44,
    },
    "rfc": {
        "cc": "newreno",
        "byte_counting": False,
        "sack": False,
        "dsack": False,
        "rack": False,
        "rack_rtt_in_ack_order": False,
        "tlp": False,
        "prr": False,
        "limited_transmit": False,
        "hystart": "off",
        "cubic_flavor": "rfc9438",
        "rto_formula": "rfc6298",
        "ssthresh_from": "flight",
        "cwnd_validation": False,
        "loss_timer_slack": 0,
        "gso_max_size": 0,
        "tsq": False,
        "wmem": None,
        "rcv_autotune": False,
        "sack_compression": 0,
    },
}
# Earlier Linux kernels, for reports of their era: what each kernel generation's TCP has, by
# the release that brought it (mainline commits): PRR v3.2, TCP Small Queues v3.6 with
# tcp_limit_output_bytes 128 KiB, tail loss probe v3.10, RACK loss detection v4.4 (on by
# default), the TSQ limit doubled to 256 KiB in v4.2, SACK compression (tcp_comp_sack_nr 44)
# v4.18, tcp_rmem's default raised from 87380 to 128 KiB in v4.20; CUBIC with HyStart and
# the other defaults of ``linux`` since before v3.10.
TCP_PROFILES["linux-4.19"] = {**TCP_PROFILES["linux"]}
TCP_PROFILES["linux-3.10"] = {**TCP_PROFILES["linux"], "rack": False, "sack_compression": 0}
#: Fields with a scenario-wide default that a kernel generation sets otherwise (unless given).
_PROFILE_FIELDS: dict[str, dict[str, Any]] = {
    # Receive-buffer growth with a 16-segment cushion until v6.16 (tcp_rcvbuf_grow since); no pushed
    # ACK before v6.7 (tcp_measure_rcv_mss).
    "linux-4.19": {
        "limit_output_bytes": 256 * 1024,
        "rmem": [4096, 87_380, 6_291_456],
        "rcvbuf_growth": "linux-4.19",
        "ack_pushed": False,
    },
    "linux-3.10": {
        "limit_output_bytes": 128 * 1024,
        "rmem": [4096, 87_380, 6_291_456],
        "rcvbuf_growth": "linux-4.19",
        "ack_pushed": False,
    },
}
_NEEDS_SACK = ("dsack", "rack", "tlp", "prr")
#: Profile defaults where ``None`` is a value ("no limit"), not "unset".
_NONE_IS_VALUE = ("wmem",)


class DelayedAck(Model):
    """Receiver acknowledgment policy."""

    count: Count32 = 2
    timeout: Time = 40_000_000_000
    quickack: int = Field(default=16, ge=0, le=U32_MAX)


class Wakeup(Model):
    """A delay distribution: how long the receiving process takes to run once
    data woke it (the scheduler's wake-up latency), or, as ``preemption.wait``,
    how long it waits for a CPU after a preemption. ``constant``: ``delay`` every time;
    ``exponential`` (default): mean ``delay``; ``empirical``: drawn uniformly
    from ``samples`` (measured delays). Draws come from a random stream of
    each connection's own (seeded by ``seed``)."""

    kind: Annotated[WakeupKind, one_of(WakeupKind)] = "exponential"
    delay: Time = 20_000_000
    samples: list[Time] = Field(default_factory=list)

    @model_validator(mode="after")
    def _samples(self) -> "Wakeup":
        if self.kind == "empirical" and not self.samples:
            raise issues_error(("samples", "'empirical' needs at least one delay"))
        if self.kind != "empirical" and self.samples:
            raise issues_error(("samples", f"only for kind 'empirical' (kind is '{self.kind}')"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        if self.kind == "constant":
            return {"kind": "constant", "delay_ps": self.delay}
        if self.kind == "exponential":
            return {"kind": "exponential", "mean_ps": self.delay}
        return {"kind": "empirical", "samples_ps": list(self.samples)}


class Preemption(Model):
    """The reading process loses its CPU between two ``read()`` calls: after
    every call that copied data (whether or not it emptied the socket), with
    ``probability`` the process waits for a CPU for a delay drawn from
    ``wait`` (same kinds as ``wakeup``; a random stream of its own per
    connection); data arriving meanwhile does not wake it and is read when it
    runs again."""

    probability: float = Field(ge=0.0, le=1.0)
    wait: Wakeup

    def to_resolved(self) -> dict[str, Any]:
        return {"probability": self.probability, "wait": self.wait.to_resolved()}


class ReceiverApp(Model):
    """The application reading the receiving socket (docs/models/tcp-host.md,
    "Receiving application"): ``read()`` calls of ``read_size`` bytes (iperf3's
    default for TCP, 128 KiB), a ``wakeup`` delay when data arrives while it
    sleeps, ``copy_rate`` (payload copied per second while it holds the
    socket; segments arriving meanwhile wait in the socket backlog) and an
    optional ``preemption`` between calls. On a host with a datapath model
    (``network.host.model``) the process runs on a core of its host
    (``on_core``, the default): it waits for the core behind the core's
    softirq work and queued transmit batches, its copies occupy the core,
    and ``wakeup`` is the scheduler's latency on an idle core only.
    ``on_core: false`` keeps it on its own timers there too; ``copy_slice``
    (absent: off) copies each chunk in turns of that many bytes on the core, with
    the core's softirq work served between them while the process keeps the
    socket. Absent: the
    ideal reader, which reads every byte the moment it arrives."""

    read_size: Size = 131_072
    wakeup: Wakeup = Field(default_factory=Wakeup)
    copy_rate: Rate = 40_000_000_000
    preemption: Optional[Preemption] = None
    loop_time: Time = 0
    on_core: bool = True
    copy_slice: Optional[Size] = None

    def to_resolved(self) -> dict[str, Any]:
        out: dict[str, Any] = {"read_bytes": self.read_size, "wakeup": self.wakeup.to_resolved(), "copy_bps": self.copy_rate}
        if self.preemption is not None:
            out["preemption"] = self.preemption.to_resolved()
        if self.loop_time:
            out["loop_ps"] = self.loop_time
        if not self.on_core:
            out["on_core"] = False
        if self.copy_slice:
            out["copy_slice_bytes"] = self.copy_slice
        return out


class Tcp(Model):
    """TCP parameters. ``profile`` picks the defaults of the fields left unset
    (``TCP_PROFILES``): ``linux`` (the default) is a current Linux sender and
    receiver (CUBIC with HyStart, SACK, RACK-TLP, PRR), ``rfc`` the RFC
    baseline without SACK (NewReno recovery); ``linux-4.19`` and ``linux-3.10``
    are earlier kernels (4.19: TSQ limit 256 KiB, 87380 B initial receive
    buffer; 3.10 also without RACK and SACK compression: loss detection by
    duplicate ACKs and SACK, tail loss probe, PRR). All: initial window 10, minimum
    RTO 200 ms, delayed ACKs every 2 segments or 40 ms after a 16-segment
    quick-ACK start, timestamps (52 B of IP + TCP headers), 6 MiB receive
    window. After validation every field holds its value.

    The ``linux`` profile's sending host is Linux's too (docs/models/tcp-host.md):
    TSO bursts sized by ``tcp_tso_autosize`` (``gso_max_size``,
    ``min_tso_segs``, ``tso_rtt_log``), TCP Small Queues (``tsq``,
    ``limit_output_bytes`` = ``tcp_limit_output_bytes``), a send buffer
    autotuned within ``wmem`` (``tcp_wmem``) and receive-window autotuning
    within ``rmem`` (``tcp_rmem``, ``tcp_moderate_rcvbuf``; ``rcvbuf_growth``
    names the kernel whose rule grows the buffer; with
    ``rcv_truesize_overhead``, the memory a received segment takes beyond
    its payload, the window per byte of buffer is learned from the first
    full segment as Linux 6.7+ does, else it stays ``rcv_scaling_ratio``); pacing is off
    (``pacing``) as on a host without ``fq``. A fixed ``rwnd`` (or ``sndbuf``)
    is a socket buffer set by the application, which turns autotuning off."""

    profile: Annotated[TcpProfileName, one_of(TcpProfileName)] = "linux"
    cc: Optional[CcName] = None
    cc_params: Optional[dict[str, Any]] = None
    mtu: PacketSize = 1500
    header: HeaderSize = 52
    l2_header: HeaderSize = 18
    min_frame: HeaderSize = 64
    init_cwnd: Count32 = 10
    rwnd: Optional[Size] = None
    rcv_autotune: Optional[bool] = None
    rmem: BufferSizes = Field(default_factory=lambda: [4096, 131_072, 6_291_456])
    rcv_scaling_ratio: Ratio = 0.5
    rcv_truesize_overhead: Optional[HeaderSize] = None
    rcvbuf_growth: Annotated[RcvbufGrowth, one_of(RcvbufGrowth)] = "linux-6.18"
    #: A full-sized PSH segment marks the pending ACK pushed and a read that empties the queue sends it
    #: (``tcp_measure_rcv_mss``, Linux 6.7+); off in the earlier kernels' profiles.
    ack_pushed: bool = True
    wmem: Optional[BufferSizes] = None
    sndbuf: Optional[Size] = None
    min_rto: Time = 200_000_000_000
    initial_rto: Duration = 10**12
    max_rto: Duration = 120 * 10**12
    clock_granularity: Time = 1_000_000_000
    delayed_ack: DelayedAck = Field(default_factory=DelayedAck)
    ecn: bool = False
    dctcp_g: float = Field(default=1 / 16, gt=0, le=1)
    htcp_rtt_scaling: bool = True
    htcp_bandwidth_switch: bool = True
    byte_counting: Optional[bool] = None
    dupack_threshold: Count32 = 3
    pacing_rate: Optional[Rate] = None
    pacing: Optional[Annotated[PacingMode, one_of(PacingMode)]] = None
    pacing_ss_ratio: Ratio = 2.0
    pacing_ca_ratio: Ratio = 1.2
    gso_max_size: Optional[Overhead32] = None
    min_tso_segs: Count32 = 2
    tso_rtt_log: int = Field(default=9, ge=0, le=31)
    tsq: Optional[bool] = None
    limit_output_bytes: Size = 4 << 20
    sack: Optional[bool] = None
    dsack: Optional[bool] = None
    rack: Optional[bool] = None
    #: ``RACK.rtt`` from the last segment an ACK delivers in Linux's order (SACKed, then
    #: cumulatively acknowledged) rather than from the most recently sent (RFC 8985).
    rack_rtt_in_ack_order: Optional[bool] = None
    tlp: Optional[bool] = None
    prr: Optional[bool] = None
    limited_transmit: Optional[bool] = None
    hystart: Optional[Annotated[HystartKind, one_of(HystartKind)]] = None
    cubic_flavor: Optional[Annotated[CubicFlavor, one_of(CubicFlavor)]] = None
    rto_formula: Optional[Annotated[RtoFormula, one_of(RtoFormula)]] = None
    ssthresh_from: Optional[Annotated[SsthreshFrom, one_of(SsthreshFrom)]] = None
    cwnd_validation: Optional[bool] = None
    loss_timer_slack: Optional[Time] = None
    receiver_app: Optional[ReceiverApp] = None
    sack_compression: Optional[int] = Field(default=None, ge=0, le=U32_MAX)
    sack_compression_delay: Time = 1_000_000_000
    cubic_hz: int = Field(default=0, ge=0, le=100_000)
    cubic_hold_hz32: bool = True

    @model_validator(mode="after")
    def _mss(self) -> "Tcp":
        # Linux's smallest segment: tcp_min_snd_mss (48) less 12 B of timestamp option.
        if self.mtu - self.header < 36:
            raise issues_error(
                ("mtu", f"leaves {self.mtu - self.header} B of payload after the {self.header} B header; need at least 36")
            )
        if self.min_rto > self.max_rto:
            raise issues_error(("min_rto", "must not exceed max_rto"))
        return self

    @model_validator(mode="after")
    def _profile_defaults(self) -> "Tcp":
        """Fills the fields left unset from the profile, then checks they agree."""
        defaults = TCP_PROFILES[self.profile]
        for name, value in _PROFILE_FIELDS.get(self.profile, {}).items():
            if name not in self.model_fields_set:
                setattr(self, name, value)
        if self.cc is None:
            self.cc = defaults["cc"]
        if self.sack is None:
            self.sack = defaults["sack"]
        explicit = self.model_fields_set
        for name, value in defaults.items():
            if getattr(self, name) is not None or (name in _NONE_IS_VALUE and name in explicit):
                continue
            if name == "rcv_autotune":
                # A fixed window is a locked receive buffer (SO_RCVBUF).
                value = value and self.rwnd is None
            elif name == "wmem" and self.sndbuf is not None:
                value = None
            if name in _NEEDS_SACK:
                value = value and self.sack
            elif name == "hystart" and value == "classic" and self.cc != "cubic":
                value = "off"
            setattr(self, name, value)
        if self.rwnd is None:
            self.rwnd = 6 * 1024 * 1024
        if self.pacing is None:
            self.pacing = "off" if self.pacing_rate is None else ("internal" if self.profile.startswith("linux") else "fixed")
        issues = []
        if self.pacing == "fixed" and self.pacing_rate is None:
            issues.append(("pacing", "'fixed' needs a pacing_rate"))
        if self.rcv_autotune and self.rmem[2] * self.rcv_scaling_ratio < self.mtu - self.header:
            issues.append(("rmem", "the largest receive buffer must hold at least one segment"))
        if not 0 < self.rcv_scaling_ratio < 1:
            issues.append(("rcv_scaling_ratio", "must be between 0% and 100%"))
        if not self.sack:
            issues += [(n, "needs sack: true (without SACK the sender uses NewReno recovery)") for n in _NEEDS_SACK if getattr(self, n)]
        if self.hystart == "classic" and self.cc != "cubic":
            issues.append(("hystart", f"'classic' is part of CUBIC (cc is '{self.cc}'); use 'hystart++' or 'off'"))
        if self.cc in BUILT_IN_CC and self.cc_params is not None:
            issues.append(("cc_params", f"only a registered controller takes parameters (cc is the built-in '{self.cc}')"))
        elif self.cc not in BUILT_IN_CC:
            from fabricsim import extensions

            bad = extensions.check_cc_params(self.cc, self.cc_params)
            if bad is not None:
                issues.append((f"cc_params.{bad[0]}" if bad[0] else "cc_params", bad[1]))
        if issues:
            raise issues_error(*issues)
        return self

    def to_resolved(self) -> dict[str, Any]:
        out = self._resolved()
        if self.cc_params is not None:
            out["cc_params"] = self.cc_params
        if self.receiver_app is not None:
            out["receiver_app"] = self.receiver_app.to_resolved()
        # Always written: the core's default follows its own profile table, and
        # an explicit 0 must reach it as 0.
        out["sack_compression_segments"] = self.sack_compression
        out["sack_compression_delay_ps"] = self.sack_compression_delay
        if self.cubic_hz:
            out["cubic_hz"] = self.cubic_hz
        if not self.cubic_hold_hz32:
            out["cubic_hold_hz32"] = False
        return out

    def _resolved(self) -> dict[str, Any]:
        return {
            # the core knows the two families; a kernel generation is a Linux profile with its fields set
            "profile": "linux" if self.profile.startswith("linux") else self.profile,
            "cc": self.cc,
            "mtu_bytes": self.mtu,
            "header_bytes": self.header,
            "l2_bytes": self.l2_header,
            "min_frame_bytes": self.min_frame,
            "init_cwnd_segments": self.init_cwnd,
            "rwnd_bytes": self.rwnd,
            "rcv_autotune": self.rcv_autotune,
            "rmem": self.rmem,
            "rcv_scaling_ratio": max(1, min(255, round(self.rcv_scaling_ratio * 256))),
            "rcv_truesize_overhead": self.rcv_truesize_overhead,
            "rcvbuf_growth": self.rcvbuf_growth.replace("-", "_").replace(".", "_"),
            "ack_pushed": self.ack_pushed,
            "wmem": self.wmem,
            "sndbuf_bytes": self.sndbuf,
            "min_rto_ps": self.min_rto,
            "initial_rto_ps": self.initial_rto,
            "max_rto_ps": self.max_rto,
            "clock_granularity_ps": self.clock_granularity,
            "delack_count": self.delayed_ack.count,
            "delack_timeout_ps": self.delayed_ack.timeout,
            "quickack_segments": self.delayed_ack.quickack,
            "ecn": self.ecn,
            "dctcp_g": self.dctcp_g,
            "htcp_rtt_scaling": self.htcp_rtt_scaling,
            "htcp_bandwidth_switch": self.htcp_bandwidth_switch,
            "byte_counting": self.byte_counting,
            "dupack_threshold": self.dupack_threshold,
            "pacing_bps": self.pacing_rate,
            "pacing": self.pacing,
            "pacing_ss_ratio_pct": round(self.pacing_ss_ratio * 100),
            "pacing_ca_ratio_pct": round(self.pacing_ca_ratio * 100),
            "gso_max_bytes": self.gso_max_size,
            "min_tso_segs": self.min_tso_segs,
            "tso_rtt_log": self.tso_rtt_log,
            "tsq": self.tsq,
            "limit_output_bytes": self.limit_output_bytes,
            "sack": self.sack,
            "dsack": self.dsack,
            "rack": self.rack,
            "rack_rtt_in_ack_order": self.rack_rtt_in_ack_order,
            "tlp": self.tlp,
            "prr": self.prr,
            "limited_transmit": self.limited_transmit,
            "hystart": self.hystart,
            "cubic_flavor": self.cubic_flavor,
            "rto_formula": self.rto_formula,
            "ssthresh_from": self.ssthresh_from,
            "cwnd_validation": self.cwnd_validation,
            "loss_timer_slack_ps": self.loss_timer_slack,
        }


class Dcqcn(DeferredModel):
    """DCQCN (docs/models/rocev2-dcqcn.md). Defaults: DCQCN-paper timing with
    HPCC's increase steps (5 / 50 Mb/s per 25G of NIC rate when unset)."""

    enabled: bool = True
    g: float = Field(default=1 / 256, gt=0, le=1)
    initial_alpha: float = Field(default=1.0, ge=0, le=1)
    alpha_interval: Duration = 55_000_000
    rate_decrease_interval: Time = 50_000_000
    rate_increase_timer: Duration = 55_000_000
    byte_counter: Optional[Size] = None
    fast_recovery_stages: int = Field(default=5, ge=0, le=U32_MAX)
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


RoceRecovery = Literal["go_back_n", "selective_repeat"]


class Roce(DeferredModel):
    """RoCEv2 RC parameters: payload ``mtu``, ``header`` bytes per frame (Eth 14 +
    IP 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4), ACK every ``ack_every`` packets and
    at message ends, ACK/NACK and CNP classes, go-back-N timeout ``rto`` (default
    the NIC local ACK timeout 4.096 us x 2^14 = 67.108864 ms; time the QP's NIC
    spends paused by PFC does not count). ``cc``: the rate controller, ``dcqcn``
    (the ``dcqcn`` section) or one registered in the core by name, with its
    ``cc_params`` (docs/extending/rate-control.md). ``recovery``: ``go_back_n`` (the
    RoCEv2 RC rule) or ``selective_repeat`` (out-of-order placement, NACKs with a
    bitmap, only the holes resent once ``dupthresh`` later packets are held). ``int``:
    switches stamp the QPs' data with in-band telemetry for the controller (always
    with ``cc: hpcc``). ``cc: nscc`` with ``cc_params.entropies`` > 1 sprays each QP
    over paths and needs ``recovery: selective_repeat``."""

    mtu: PacketSize = 1024
    header: HeaderSize = 62
    ack_every: Count32 = 1
    ack_class: Optional[int] = Field(default=None, ge=0, le=7)
    cnp_class: int = Field(default=7, ge=0, le=7)
    rto: Duration = 67_108_864_000
    recovery: Annotated[RoceRecovery, one_of(RoceRecovery)] = "go_back_n"
    dupthresh: int = Field(default=3, ge=1, le=64)
    ecn: bool = True
    dcqcn: Dcqcn = Field(default_factory=Dcqcn)
    cc: Annotated[str, BeforeValidator(extensions.rate_controller)] = "dcqcn"
    cc_params: Optional[dict[str, Any]] = None
    int: bool = False

    @model_validator(mode="after")
    def _cc_params(self) -> "Roce":
        if self.cc == "dcqcn":
            if self.cc_params is not None:
                raise issues_error(("cc_params", "only for a registered rate controller (cc is dcqcn)"))
            return self
        issues = extensions.param_issues("rate_cc", self.cc, self.cc_params or {})
        if issues:
            raise issues_error(*issues)
        entropies = (self.cc_params or {}).get("entropies", 1)
        if self.cc == "nscc" and entropies > 1 and self.recovery != "selective_repeat":
            raise issues_error(
                (
                    "recovery",
                    f"must be selective_repeat when cc_params.entropies > 1 (got {entropies}: packets of a QP "
                    f"take several paths and reorder); allowed: selective_repeat",
                )
            )
        return self

    def to_resolved(self) -> dict[str, Any]:
        # A registered controller is named only when chosen, so that runs with
        # DCQCN resolve to the same document as before.
        chosen = {} if self.cc == "dcqcn" else {"cc": self.cc, "cc_params": self.cc_params or {}}
        # Likewise selective repeat, and its threshold.
        if self.recovery != "go_back_n":
            chosen.update(recovery=self.recovery, dupthresh=self.dupthresh)
        if self.int:
            chosen["int"] = True
        return {
            **chosen,
            "mtu_bytes": self.mtu,
            "header_bytes": self.header,
            "ack_every": self.ack_every,
            "ack_class": self.ack_class,
            "cnp_class": self.cnp_class,
            "rto_ps": self.rto,
            "ecn": self.ecn,
            "dcqcn": self.dcqcn.to_resolved(),
        }
