"""NewReno window growth (RFC 5681 3.1) in Python: the core's ``cc/newreno.rs`` line for line.

Slow start adds ``min(acked, SMSS)`` per ACK (``2 SMSS`` with ``byte_counting``, RFC 3465); congestion
avoidance adds ``SMSS * SMSS / cwnd`` per ACK, or one SMSS per cwnd of acknowledged bytes with
``byte_counting``. A congestion event sets ``ssthresh = max(FlightSize / 2, 2 SMSS)``.
"""

from typing import Any

NEWRENO_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "byte_counting": {"type": "boolean", "description": "RFC 3465 byte counting (the linux profile's NewReno)"}
    },
}


class NewRenoPy:
    """NewReno (RFC 5681), written in Python."""

    def __init__(self, params: dict[str, Any], conn: Any) -> None:
        self.byte_counting = bool(params.get("byte_counting", False))
        self.acc = 0  # bytes acknowledged since the last congestion-avoidance increase
        self.cwnd = conn.cwnd
        self.ssthresh = 2**64 - 1

    def cong_avoid(self, ack: Any) -> None:
        mss = ack.mss
        if self.cwnd < self.ssthresh:
            self.cwnd += min(ack.acked, 2 * mss if self.byte_counting else mss)
        elif self.byte_counting:
            self.acc += ack.acked
            if self.acc >= self.cwnd:
                self.acc -= self.cwnd
                self.cwnd += mss
        else:
            self.cwnd += max(mss * mss // max(self.cwnd, 1), 1)

    def on_loss(self, loss: Any) -> int:
        return max(loss.flight // 2, 2 * loss.mss)
