"""Transport parameters: TCP (``tcp``, and a TCP traffic entry's ``tcp``) and RoCEv2 with DCQCN (``roce``)."""

from typing import Annotated, Any, Literal, Optional

from pydantic import Field, model_validator

from fabricsim.schema._base import Duration, Model, Overhead, Rate, Size, Time, issues_error, one_of

__all__ = ["Dcqcn", "DelayedAck", "Roce", "Tcp"]

CongestionControl = Literal["newreno", "cubic", "dctcp"]


class DelayedAck(Model):
    """Receiver acknowledgment policy."""

    count: int = Field(default=2, ge=1)
    timeout: Time = 40_000_000_000
    quickack: int = Field(default=16, ge=0)


class Tcp(Model):
    """TCP parameters. Defaults follow Linux: initial window 10, minimum RTO
    200 ms, delayed ACKs every 2 segments or 40 ms after a 16-segment quick-ACK
    start, timestamps (52 B of IP + TCP headers), 6 MiB receive window."""

    cc: Annotated[CongestionControl, one_of(CongestionControl)] = "newreno"
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
            raise issues_error(("mtu", f"leaves {self.mtu - self.header} B of payload after the {self.header} B header"))
        if self.min_rto > self.max_rto:
            raise issues_error(("min_rto", "must not exceed max_rto"))
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


class Dcqcn(Model):
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


class Roce(Model):
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
