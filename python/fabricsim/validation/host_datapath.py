"""The host CPU model against the real-Linux datapath measurements.

The lab (:mod:`fabricsim.validation.linux_datapath`) ran iperf3 between two
network namespaces of one 2-CPU machine over a veth, with and without a
VXLAN tunnel and nftables connection tracking, over an MTU sweep, and
measured the CPU time per packet of each stage. The ``linux-veth`` host
preset carries those costs; this module builds the fabricsim twin of every
measured point and compares the throughput the model predicts with the one
measured:

- two hosts ``a`` and ``b``, namespaces of one machine (``machines``): they
  share its 2 cores, of which the datapath got the CPU share the lab
  measured (``cpu_s_per_s``, split over the cores in use); received packets
  are processed on the core of the flow's application (the veth's CPU),
  and instance ``i`` runs on core ``i mod 2`` at both ends, as in the lab;
- a direct link much faster than the CPU (the veth has no line rate);
- the ``linux-veth`` stages of the configuration (TCP/IP, VXLAN encap/decap,
  conntrack); TCP CUBIC with the lab's MTU and 52 B of headers;
- a receive window of :data:`WINDOW_SEGMENTS` segments: the lab's receivers
  autotune their window from what the application reads, counting each
  skb's true size (so small segments get a small window), which keeps the
  CPU's 1000-packet backlog from overflowing; the model's TCP has a fixed
  window, so the twin takes one that keeps two flows per core below the
  backlog. Any window of more than a few segments keeps the core busy, so
  the CPU-bound rate does not depend on it (the test checks a second size).

The costs come from the same runs' CPU accounting (fitted over all MTUs),
so this checks that the model composes them into the measured throughput
curve (queueing, TCP dynamics, the linear cost form), not an independent
prediction of the absolute rate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from fabricsim.hosts import linux_veth

__all__ = ["DATA", "compare", "points", "twin"]

DATA = Path(__file__).resolve().parent / "data" / "linux_datapath.json"
#: Bytes of IPv4 + TCP headers with timestamps (the lab's segments).
TCP_HEADERS = 52
#: Receive window of the twin's flows, in segments (see the module's notes).
WINDOW_SEGMENTS = 256


def points(path: Path = DATA) -> list[dict[str, Any]]:
    """The measured points (config, MTU, instances, throughput, CPU share)."""
    return json.loads(path.read_text())["points"]


def stages(config: str) -> list[dict[str, Any]]:
    """The ``linux-veth`` stages of a lab configuration (``veth``, ``veth+ct``, ``vxlan``, ``vxlan+ct``)."""
    tunnel = config.startswith("vxlan")
    out = [linux_veth.stage("tcp", linux_veth.STACK, name="tcp_ip_veth")]
    if config.endswith("+ct"):
        out.append(linux_veth.conntrack_stage(tunnel))
    if tunnel:
        out.extend(linux_veth.vxlan_stages())
    return out


def twin(
    point: dict[str, Any], duration: str = "60ms", omit: str = "20ms", window_segments: int = WINDOW_SEGMENTS
) -> dict[str, Any]:
    """The fabricsim scenario of one measured point."""
    instances = int(point["instances"])
    used = min(instances, 2)
    share = min(1.0, point["cpu_s_per_s"] / used)
    return {
        "name": f"linux-datapath {point['config']} m={point['mtu']} x{instances}",
        "duration": duration,
        "network": {
            "host": {
                "model": {
                    "preset": "linux-veth",
                    "cores": 2,
                    "core_share": f"{share * 100:.4f}%",
                    "machines": [["a", "b"]],
                    "stages": stages(point["config"]),
                }
            }
        },
        "topology": {
            "kind": "explicit",
            "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
            "links": [{"a": "a", "b": "b", "rate": "1Tbps", "delay": "0"}],
        },
        "tcp": {
            "cc": "cubic",
            "mtu": int(point["inner_mtu"]),
            "rwnd": f"{window_segments * (int(point['inner_mtu']) - TCP_HEADERS)}B",
        },
        "traffic": [
            {"kind": "iperf3", "src": "a", "dst": "b", "instances": instances, "duration": duration, "omit": omit}
        ],
        "stats": {"queue_sample_interval": 0, "throughput_interval": 0, "cpu_interval": "1ms"},
    }


def compare(
    selection: Optional[list[dict[str, Any]]] = None, seed: int = 1, window_segments: int = WINDOW_SEGMENTS
) -> list[dict[str, Any]]:
    """Model vs measurement for each point: data packets per second and goodput, and their ratios."""
    import fabricsim

    rows = []
    for p in selection if selection is not None else points():
        result = fabricsim.run(fabricsim.from_dict(twin(p, window_segments=window_segments)), seed=seed, progress=False)
        pps = float(result.summary["iperf3_packets_per_s"])
        gbps = float(result.summary["iperf3_gbps"])
        rows.append(
            {
                "config": p["config"],
                "mtu": p["mtu"],
                "instances": p["instances"],
                "measured_pps": p["data_packets_per_s"],
                "model_pps": pps,
                "pps_ratio": pps / p["data_packets_per_s"],
                "measured_gbps": p["goodput_bps"] / 1e9,
                "model_gbps": gbps,
                "gbps_ratio": gbps / (p["goodput_bps"] / 1e9),
                "cpu_share": p["cpu_s_per_s"],
                "conservation_ok": bool(result.summary["conservation_ok"]),
            }
        )
    return rows


def _main() -> int:
    rows = compare()
    print("| config | MTU | x | measured pps | model pps | ratio | measured Gbps | model Gbps |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['config']} | {r['mtu']} | {r['instances']} | {r['measured_pps']:.0f} | {r['model_pps']:.0f} | "
            f"{r['pps_ratio']:.3f} | {r['measured_gbps']:.3f} | {r['model_gbps']:.3f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
