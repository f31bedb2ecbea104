"""Validation against independent references.

- :mod:`fabricsim.validation.ns3` runs the same experiments in ns-3 (optional
  dependency: ``pip install ns3``).
- :func:`star_scenario` builds the fabricsim scenario that mirrors them: the
  same star topology (N senders, one switch, one receiver), point-to-point
  framing (2 B link header, no preamble or inter-frame gap), a drop-tail queue
  of ``queue_packets`` full-size frames at the switch port towards the
  receiver, and ns-3's TCP settings (MSS 1448 with timestamps, initial window
  10, delayed ACK every 2 segments or 200 ms without quick-ACK, minimum RTO
  200 ms, no SACK, 256 KB windows).
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["star_scenario", "NS3_FRAME_BYTES"]

#: 1448 B payload + 12 B TCP options + 20 B TCP + 20 B IP + 2 B PPP.
NS3_FRAME_BYTES = 1502


def star_scenario(
    senders: int = 16,
    flows_per_sender: int = 1,
    bytes_per_flow: int = 5_000_000,
    rate: str = "10Gbps",
    delay: str = "1us",
    queue_packets: int = 1000,
    cc: str = "newreno",
    window_bytes: int = 262144,
    k_packets: Optional[int] = None,
    delack_count: int = 2,
    name: str = "ns3-star",
) -> dict[str, Any]:
    """The fabricsim scenario mirroring :func:`fabricsim.validation.ns3.incast`."""
    switch: dict[str, Any] = {
        "latency": "0ns",
        "buffer": {"model": "static", "port_size": f"{queue_packets * NS3_FRAME_BYTES}B"},
    }
    if k_packets is not None:
        k = f"{k_packets * NS3_FRAME_BYTES}B"
        switch["ecn"] = {"kmin": k, "kmax": k, "pmax": 1.0}
    return {
        "name": name,
        "seed": 1,
        "duration": "60s",
        "network": {"ethernet_overhead": "0B", "switch": switch},
        "topology": {"kind": "star", "hosts": senders + 1, "link": {"rate": rate, "delay": delay}},
        "tcp": {
            "cc": cc,
            "l2_header": "2B",
            "min_frame": "0B",
            "rwnd": f"{window_bytes}B",
            "min_rto": "200ms",
            "delayed_ack": {"count": delack_count, "timeout": "200ms", "quickack": 0},
        },
        "traffic": [
            {
                "kind": "tcp_bulk",
                "name": "flows",
                "src": [f"h{i}" for i in range(1, senders + 1)],
                "dst": "h0",
                "streams": flows_per_sender,
                "size": f"{bytes_per_flow}B",
            }
        ],
        "stats": {"queue_sample_interval": "0", "throughput_interval": "1ms"},
    }
