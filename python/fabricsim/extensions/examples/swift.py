"""The Swift-like delay-based controller in Python: ``crates/fabricsim-ext-example/src/swift.rs`` line
for line, in the same floating-point operations in the same order, so a run gives the Rust version's
outputs byte for byte (see docs/extending/congestion-control.md for the algorithm).

Swift (Kumar et al., SIGCOMM 2020): a target delay (``base_target`` plus flow scaling, which adds up to
``fs_range`` to flows with small windows), additive increase of ``ai`` segments per RTT below it,
multiplicative decrease in proportion to the excess above it (at most ``max_mdf``, at most once per
RTT), ``1 - max_mdf`` on a loss, and pacing below one segment of window.
"""

import math
from typing import Any, Optional

_DEFAULTS = {
    "base_target_us": 25.0,
    "fs_range_us": 50.0,
    "fs_min_cwnd": 0.1,
    "fs_max_cwnd": 100.0,
    "ai": 1.0,
    "beta": 0.8,
    "max_mdf": 0.5,
    "min_cwnd": 0.01,
    "max_cwnd": 10_000.0,
    "rto_reset": 3,
}
_RANGES = {
    "base_target_us": (0.1, 1e6),
    "fs_range_us": (0.0, 1e6),
    "fs_min_cwnd": (0.001, 1e6),
    "fs_max_cwnd": (0.001, 1e6),
    "ai": (0.0, 1e3),
    "beta": (0.0, 1.0),
    "max_mdf": (0.0, 1.0),
    "min_cwnd": (0.001, 1e6),
    "max_cwnd": (1.0, 1e9),
    "rto_reset": (1, 1000),
}

SWIFT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        name: {
            "type": "integer" if name == "rto_reset" else "number",
            "default": _DEFAULTS[name],
            "minimum": lo,
            "maximum": hi,
        }
        for name, (lo, hi) in _RANGES.items()
    },
}


class SwiftPy:
    """Swift-like delay-based control (SIGCOMM 2020), written in Python."""

    pacing_rate: Optional[int] = None

    def __init__(self, params: dict[str, Any], conn: Any) -> None:
        p = {**_DEFAULTS, **params}
        self.p = p
        lo, hi = 1.0 / math.sqrt(p["fs_min_cwnd"]), 1.0 / math.sqrt(p["fs_max_cwnd"])
        self.fs_alpha = p["fs_range_us"] * 1e-6 / (lo - hi)
        self.fs_b = -self.fs_alpha * hi
        self.mss = conn.mss
        self.swnd = min(max(conn.cwnd / conn.mss, p["min_cwnd"]), p["max_cwnd"])  # Swift's window, segments
        self.last_decrease: Optional[int] = None  # picoseconds
        self.rtt = 0.0  # seconds
        self.timeouts = 0
        self.cwnd = conn.cwnd
        self.ssthresh = 2**64 - 1

    def target(self) -> float:
        fs = min(max(self.fs_alpha / math.sqrt(self.swnd) + self.fs_b, 0.0), self.p["fs_range_us"] * 1e-6)
        return self.p["base_target_us"] * 1e-6 + fs

    def _can_decrease(self, now_ps: int) -> bool:
        return self.last_decrease is None or (now_ps - self.last_decrease) / 1e12 >= self.rtt

    def _decrease_to(self, factor: float, now_ps: int) -> None:
        self.swnd = min(max(self.swnd * factor, self.p["min_cwnd"]), self.p["max_cwnd"])
        self.last_decrease = now_ps

    def _write(self) -> None:
        self.cwnd = max(int(self.swnd * self.mss), self.mss)
        self.ssthresh = self.cwnd

    def _pace(self) -> None:
        if self.swnd < 1.0 and self.rtt > 0.0:
            self.pacing_rate = max(int(self.swnd * self.mss * 8.0 / self.rtt), 1)
        else:
            self.pacing_rate = 0

    def on_delay(self, now_ps: int, delay: float, acked_segments: float) -> None:
        self.rtt = delay
        target = self.target()
        if delay < target:
            p = self.p
            self.swnd += p["ai"] / self.swnd * acked_segments if self.swnd >= 1.0 else p["ai"] * acked_segments
            self.swnd = min(self.swnd, p["max_cwnd"])
        elif self._can_decrease(now_ps):
            factor = max(1.0 - self.p["beta"] * (delay - target) / delay, 1.0 - self.p["max_mdf"])
            self._decrease_to(factor, now_ps)

    def on_ack(self, ack: Any) -> None:
        self.timeouts = 0
        if ack.state in ("recovery", "cwr"):
            self._pace()
            return
        if ack.rtt_ps is not None:
            self.on_delay(ack.now_ps, ack.rtt_ps / 1e12, ack.acked / self.mss)
        self._write()
        self._pace()

    def cong_avoid(self, ack: Any) -> None:
        self._write()
        self._pace()

    def on_loss(self, loss: Any) -> int:
        if self._can_decrease(loss.now_ps):
            self._decrease_to(1.0 - self.p["max_mdf"], loss.now_ps)
        self._pace()
        return max(int(self.swnd * self.mss), self.mss)

    def on_timeout(self, now_ps: int) -> None:
        self.timeouts += 1
        if self.timeouts >= self.p["rto_reset"]:
            self.swnd = self.p["min_cwnd"]
            self.last_decrease = now_ps
        elif self._can_decrease(now_ps):
            self._decrease_to(1.0 - self.p["max_mdf"], now_ps)
        self._pace()
