"""``network.host.egress`` and ``network.host_overrides.NAME.egress``: what
sits below a host's stack, as a Linux qdisc chain would: transmit processing
``jitter``, an htb-like ``shaper`` and a netem-like ``delay``.

Defaults follow ``tc``: an htb class's ``burst`` (and ``cburst``) is
``rate / hz + mtu`` bytes with mtu = 1600 and hz the packet scheduler's clock
rate, which ``tc`` reads from ``/proc/net/psched`` and is 10^9 on kernels with
high-resolution timers (iproute2's ``q_htb.c`` and ``get_hz()``): about one
1600 B frame at data-center rates. ``ceil`` is ``rate``, the leaf queue holds 1000 packets (a
pfifo of ``txqueuelen``), netem's ``limit`` is 1000 packets. Jitter is off
unless given; ``jitter: true`` means an exponential draw with a mean of 2 µs
(see ``docs/models/host-shaping.md``). See ``host/egress.rs`` in the core.
"""

from typing import Any, Literal, Optional

from pydantic import Field, model_validator

from fabricsim.schema._base import DeferredModel, Rate, Size, Time, issues_error

__all__ = ["Egress", "HostOverride", "Jitter", "PortShaper", "Shaper"]

#: tc's clock rate (``/proc/net/psched`` with high-resolution timers) and
#: default mtu for htb's burst: rate / hz + mtu bytes.
TC_HZ = 1_000_000_000
TC_MTU = 1600
#: Mean transmit processing jitter when ``jitter: true`` (2 µs in ps).
DEFAULT_JITTER_PS = 2_000_000


def _tc_burst(rate_bps: int) -> int:
    return rate_bps // 8 // TC_HZ + TC_MTU


class Shaper(DeferredModel):
    """An htb class with its leaf queue: ``rate``/``burst`` and ``ceil``/``cburst``
    token buckets; ``limit`` packets (and ``limit_bytes``, a bfifo) queued."""

    rate: Rate
    burst: Optional[Size] = None
    ceil: Optional[Rate] = None
    cburst: Optional[Size] = None
    limit: int = Field(default=1000, ge=1, le=2**32 - 1)
    limit_bytes: Optional[Size] = None

    @model_validator(mode="after")
    def _checks(self) -> "Shaper":
        if self.ceil is not None and self.ceil < self.rate:
            raise issues_error(("ceil", "must be >= rate"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        ceil = self.ceil if self.ceil is not None else self.rate
        out: dict[str, Any] = {
            "rate_bps": self.rate,
            "burst_bytes": self.burst if self.burst is not None else _tc_burst(self.rate),
            "ceil_bps": ceil,
            "cburst_bytes": self.cburst if self.cburst is not None else _tc_burst(ceil),
            "limit_packets": self.limit,
        }
        if self.limit_bytes is not None:
            out["limit_bytes"] = self.limit_bytes
        return out


class Jitter(DeferredModel):
    """A random transmit processing delay per packet (``exponential`` with mean
    ``mean``, or ``uniform`` on [0, 2 x mean]); packets keep their order."""

    distribution: Literal["exponential", "uniform"] = "exponential"
    mean: Time = DEFAULT_JITTER_PS

    def to_resolved(self) -> dict[str, Any]:
        return {"distribution": self.distribution, "mean_ps": self.mean}


def _jitter_schema(schema: dict[str, Any]) -> None:
    """``jitter: true`` and ``false`` in the JSON Schema, as the loader takes them."""
    schema.setdefault("anyOf", []).insert(1, {"type": "boolean"})
    schema["description"] = "true: exponential with a mean of 2us; false or absent: off; or the distribution"


def _jitter_flag(value: Any) -> Any:
    if value is True:
        return {}
    if value is False:
        return None
    return value


class Egress(DeferredModel):
    """Below a host's stack: ``jitter``, then ``shaper``, then ``delay`` (a fixed
    one-way delay, ``delay_limit`` packets held at most); ``flow_delays`` gives
    traffic entries (by name) a delay of their own on this host."""

    delay: Time = 0
    delay_limit: int = Field(default=1000, ge=1, le=2**32 - 1)
    shaper: Optional[Shaper] = None
    jitter: Optional[Jitter] = Field(default=None, json_schema_extra=_jitter_schema)
    #: Per traffic entry name: the delay its packets leaving this host get instead of ``delay``.
    flow_delays: dict[str, Time] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _flags(cls, data: Any) -> Any:
        if isinstance(data, dict) and "jitter" in data:
            data = {**data, "jitter": _jitter_flag(data["jitter"])}
        return data

    def to_resolved(self) -> dict[str, Any]:
        out: dict[str, Any] = {"delay_ps": self.delay, "delay_limit_packets": self.delay_limit}
        if self.shaper is not None:
            out["shaper"] = self.shaper.to_resolved()
        if self.jitter is not None:
            out["jitter"] = self.jitter.to_resolved()
        if self.flow_delays:
            out["flow_delays_ps"] = dict(self.flow_delays)
        return out


class HostOverride(DeferredModel):
    """What one host sets differently from ``network.host`` (merged over it)."""

    egress: Optional[Egress] = None

    def to_resolved(self) -> dict[str, Any]:
        return {"egress": self.egress.to_resolved()} if self.egress is not None else {}


class PortShaper(DeferredModel):
    """``switch.shaper``: the switch's egress ports (all, or those ``towards``
    the named neighbours) send like an htb class (``rate``/``burst``,
    ``ceil``/``cburst``, defaults as :class:`Shaper`); the port's queue, under
    the buffer model's limits, is the class's leaf queue."""

    rate: Rate
    burst: Optional[Size] = None
    ceil: Optional[Rate] = None
    cburst: Optional[Size] = None
    towards: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _checks(self) -> "PortShaper":
        if self.ceil is not None and self.ceil < self.rate:
            raise issues_error(("ceil", "must be >= rate"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        ceil = self.ceil if self.ceil is not None else self.rate
        return {
            "rate_bps": self.rate,
            "burst_bytes": self.burst if self.burst is not None else _tc_burst(self.rate),
            "ceil_bps": ceil,
            "cburst_bytes": self.cburst if self.cburst is not None else _tc_burst(ceil),
            "towards": list(self.towards),
        }
