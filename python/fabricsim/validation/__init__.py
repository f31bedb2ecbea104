"""Validation against independent references.

- :mod:`fabricsim.validation.ns3` runs the same experiments in ns-3 (optional
  dependency: ``pip install ns3``).
- :func:`star_scenario` builds the fabricsim scenario that mirrors them: the
  same star topology (N senders, one switch, one receiver), point-to-point
  framing (2 B link header, no preamble or inter-frame gap), a drop-tail queue
  of ``queue_packets`` full-size frames at the switch port towards the
  receiver, and ns-3's TCP settings (MSS 1448 with timestamps, initial window
  10, delayed ACK every 2 segments or 200 ms without quick-ACK, minimum RTO
  200 ms, 256 KB windows).

Without SACK the twin is the ``rfc`` TCP profile (NewReno recovery, RFC 5681
growth), as ns-3 with ``Sack = false`` and classic recovery. With SACK
(:data:`NS3_SACK_TCP`) it is the SACK machinery as ns-3 3.44 has it: RFC 6675
recovery with ``ssthresh`` from ``pipe``, PRR or not (ns-3's
``TcpPrrRecovery`` or ``TcpClassicRecovery``), limited transmit, one segment
of growth per ACK, RFC 6298 timer, no RACK, no tail loss probes, no window
validation; CUBIC with Linux's constants and classic HyStart.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["star_scenario", "NS3_FRAME_BYTES", "NS3_SACK_TCP"]

#: TCP fields of the SACK twin of ns-3 3.44 (``prr`` and ``hystart`` are set per case).
NS3_SACK_TCP: dict[str, Any] = {
    "profile": "linux",
    "sack": True,
    "dsack": False,
    "rack": False,
    "tlp": False,
    "limited_transmit": True,
    "byte_counting": False,
    "cwnd_validation": False,
    "rto_formula": "rfc6298",
    "ssthresh_from": "pipe",
    "cubic_flavor": "linux",
    # ns-3's sender has no TSO bursts, TCP Small Queues or send-buffer autotuning.
    "gso_max_size": "0B",
    "tsq": False,
    "wmem": None,
}

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
    sack: bool = False,
    recovery: str = "classic",
) -> dict[str, Any]:
    """The fabricsim scenario mirroring :func:`fabricsim.validation.ns3.incast`
    with the same ``sack`` and ``recovery`` (``classic`` or ``prr``)."""
    if recovery not in ("classic", "prr"):
        raise ValueError(f"unknown recovery {recovery!r}; expected classic or prr")
    profile: dict[str, Any] = {"profile": "rfc"}
    if sack:
        profile = {**NS3_SACK_TCP, "prr": recovery == "prr", "hystart": "classic" if cc == "cubic" else "off"}
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
            **profile,
            "cc": cc,
            "l2_header": "2B",
            "min_frame": "0B",
            "rwnd": f"{window_bytes}B",
            "min_rto": "200ms",
            "delayed_ack": {"count": delack_count, "timeout": "200ms", "quickack": 0},
            # ns-3's TcpHtcp has no RTT scaling of its increase.
            **({"htcp_rtt_scaling": False} if cc == "htcp" else {}),
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
