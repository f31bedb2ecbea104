"""Buffer size against long-RTT TCP throughput, with the ``rfc`` and ``linux`` TCP profiles.

The setting of ESnet-style buffer tests (test plan R4): a sender and a
receiver 50 ms apart (RTT) through one switch whose 10G egress port towards
the receiver has a static buffer of ``buffer`` bytes; ``streams`` bulk TCP
connections (iperf3 ``-P``), 9000 B MTU, for ``duration``. The sender's link is
40G so that the switch port, not the sending host, is the bottleneck; the
receive window is large enough never to limit (Linux hosts tuned for long
paths).

With a buffer well below the bandwidth-delay product (62.5 MB here), slow
start overshoots and loses thousands of segments of one window. A NewReno
sender without SACK (``rfc``) repairs one of them per round trip and stays in
that recovery for most of the run; Linux (``linux``: SACK, RACK-TLP, PRR,
CUBIC with HyStart) repairs the window in a few round trips, or leaves slow
start before it overflows.

CLI (prints a table; ``--json`` for the rows)::

    python -m fabricsim.validation.long_rtt [--buffers 12MB 24MB 36MB] [--duration 30s]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional

__all__ = ["long_rtt_scenario", "run_case"]

PROFILES = ("rfc", "linux")


def long_rtt_scenario(
    buffer: str = "12MB",
    profile: str = "linux",
    duration: str = "30s",
    streams: int = 2,
    rtt_ms: float = 50.0,
    mtu: str = "9000B",
    cc: Optional[str] = None,
) -> dict[str, Any]:
    """The scenario of one case; ``cc`` overrides the profile's controller."""
    one_way = f"{rtt_ms / 4}ms"  # two links, each crossed twice per round trip
    tcp: dict[str, Any] = {"profile": profile, "mtu": mtu, "rwnd": "512MB"}
    if cc is not None:
        tcp["cc"] = cc
    return {
        "name": f"long-rtt-{profile}-{buffer}",
        "seed": 1,
        "duration": duration,
        "drain": False,
        "network": {"switch": {"latency": "0ns", "buffer": {"model": "static", "port_size": buffer}}},
        "topology": {
            "kind": "explicit",
            "nodes": [
                {"name": "src", "kind": "host"},
                {"name": "sw", "kind": "switch"},
                {"name": "dst", "kind": "host"},
            ],
            "links": [
                {"a": "src", "b": "sw", "rate": "40Gbps", "delay": one_way},
                {"a": "sw", "b": "dst", "rate": "10Gbps", "delay": one_way},
            ],
        },
        "tcp": tcp,
        "traffic": [{"kind": "tcp_bulk", "name": "iperf", "src": ["src"], "dst": "dst", "streams": streams, "duration": duration}],
        "stats": {"queue_sample_interval": "0", "throughput_interval": "1s"},
    }


def run_case(buffer: str, profile: str, duration: str = "30s", skip_s: float = 5.0, **kw: Any) -> dict[str, Any]:
    """Runs one case; returns goodput (whole run and after ``skip_s``), drops and per-flow counters."""
    import polars as pl

    import fabricsim
    from fabricsim import units

    scenario = fabricsim.Scenario.from_dict(long_rtt_scenario(buffer=buffer, profile=profile, duration=duration, **kw))
    result = fabricsim.run(scenario)
    secs = units.parse_time(duration) / 1e12
    tp = result.throughput
    late = tp.filter(pl.col("time_ps") >= int(skip_s * 1e12))["bytes"].sum()
    flows = result.flows
    return {
        "buffer": buffer,
        "profile": profile,
        "cc": flows["cc"][0],
        "goodput_gbps": tp["bytes"].sum() * 8 / secs / 1e9,
        "goodput_after_skip_gbps": late * 8 / (secs - skip_s) / 1e9,
        "drops": result.summary["packets_dropped"],
        "retransmits": int(flows["retransmits"].sum()),
        "timeouts": int(flows["timeouts"].sum()),
        "recoveries": int(flows["fast_retransmits"].sum()),
        "recovery_time_s": float(flows["recovery_time_ps"].sum()) / 1e12,
        "rack_losses": int(flows["rack_losses"].sum()),
        "ss_exit": [str(r) for r in flows["ss_exit_reason"].to_list()],
        "ss_exit_cwnd_mb": [None if c is None else c / 1e6 for c in flows["ss_exit_cwnd"].to_list()],
        "conservation_ok": result.summary["conservation_ok"],
    }


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--buffers", nargs="+", default=["12MB", "24MB", "36MB"])
    ap.add_argument("--profiles", nargs="+", default=list(PROFILES), choices=PROFILES)
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rows = [run_case(b, p, a.duration) for b in a.buffers for p in a.profiles]
    if a.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print("| buffer | profile | cc | goodput (Gb/s) | after 5 s | drops | retransmits | recoveries | time in recovery (s) | timeouts | slow-start exit |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(
            f"| {r['buffer']} | {r['profile']} | {r['cc']} | {r['goodput_gbps']:.2f} | {r['goodput_after_skip_gbps']:.2f} "
            f"| {r['drops']} | {r['retransmits']} | {r['recoveries']} | {r['recovery_time_s']:.2f} | {r['timeouts']} "
            f"| {', '.join(r['ss_exit'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
