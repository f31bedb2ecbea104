"""The fixed bench scenarios: resolved scenarios (the JSON the core takes), same seeds and sizes every time.

A scenario is a function ``(quick) -> resolved scenario`` in :data:`SCENARIOS`;
one with an ns-3 twin also has the arguments of that twin in :data:`NS3_TWINS`.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable, Dict, List

from fabricsim.shipped import scenario_path
from fabricsim.bench.workload import datamining_bench_scenario
from fabricsim.schema import from_dict, load
from fabricsim.validation import star_scenario

__all__ = ["NS3_TWINS", "SCALE_FAMILIES", "SCENARIOS"]

G = 1_000_000_000
US = 1_000_000
MS = 1_000_000_000


def _leafspine_udp(quick: bool) -> Dict[str, Any]:
    """4 leaves x 16 hosts at 100G, 4 spines at 400G; every host sends Poisson
    UDP at 50% load to its partner on the next leaf (a permutation)."""
    leaves, per_leaf = 4, 16
    hosts = leaves * per_leaf
    traffic = []
    for h in range(hosts):
        dst = (h + per_leaf) % hosts
        traffic.append({"kind": "udp_poisson", "name": f"p{h}", "src": [f"h{h}"], "dst": f"h{dst}",
                        "load": 0.5, "frame_bytes": 1500})
    return {
        "name": "leafspine-udp", "seed": 1, "duration_ps": (2 if quick else 10) * MS, "drain": True,
        "network": {"switch": {"latency_ps": 500_000, "buffer": {"model": "static", "port_bytes": 2_000_000}}},
        "topology": {"kind": "leaf_spine", "leaves": leaves, "spines": 4, "hosts_per_leaf": per_leaf,
                     "host_link": {"rate_bps": 100 * G, "delay_ps": 1 * US},
                     "fabric_link": {"rate_bps": 400 * G, "delay_ps": 1 * US}},
        "traffic": traffic,
        "stats": {"queue_sample_interval_ps": 10 * US},
    }


def _fattree_incast(quick: bool) -> Dict[str, Any]:
    """k=8 fat-tree (128 hosts, 10G); 127 hosts send CBR UDP at 2% load to h0
    (an oversubscribed last hop that drops), with a static 500 KB buffer per port."""
    srcs = [f"h{i}" for i in range(1, 128)]
    return {
        "name": "fattree-incast", "seed": 1, "duration_ps": (5 if quick else 50) * MS, "drain": True,
        "network": {"switch": {"latency_ps": 500_000, "buffer": {"model": "static", "port_bytes": 500_000}}},
        "topology": {"kind": "fat_tree", "k": 8, "link": {"rate_bps": 10 * G, "delay_ps": 1 * US}},
        "traffic": [{"kind": "udp_cbr", "src": srcs, "dst": "h0", "load": 0.02, "frame_bytes": 1000},
                    {"kind": "udp_poisson", "src": [f"h{i}" for i in range(64, 128)], "dst": "h1",
                     "load": 0.01, "frame_bytes": 1000}],
        "stats": {"queue_sample_interval_ps": 10 * US},
    }


def _single_port_mm1(quick: bool) -> Dict[str, Any]:
    """One 10G output port fed by Poisson arrivals at 80% load (the M/D/1 check)."""
    return {
        "name": "single-port-md1", "seed": 1, "duration_ps": (100 if quick else 500) * MS, "drain": True,
        "network": {"switch": {"latency_ps": 0, "buffer": {"model": "static", "port_bytes": 100_000_000}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10 * G, "delay_ps": 1 * US}},
        "traffic": [{"kind": "udp_poisson", "src": ["h0"], "dst": "h1", "load": 0.8, "frame_bytes": 1000}],
        "stats": {"queue_sample_interval_ps": 0},
    }


def _incast_tcp(quick: bool) -> Dict[str, Any]:
    """16 senders x 50 MB of NewReno TCP into one 10G port (1 us links, a
    1000-packet drop-tail queue), mirroring ns-3's settings exactly so the same
    experiment can be timed in ns-3 (``--ns3``)."""
    size = 5_000_000 if quick else 50_000_000
    return from_dict(star_scenario(senders=16, bytes_per_flow=size, name="incast-tcp-16x50MB")).to_resolved()


def _leafspine_datamining(quick: bool) -> Dict[str, Any]:
    """The leaf-spine data-mining FCT experiment (2 spines, 2 leaves with 4x40G
    uplinks, 24 servers at 10G and one requester) at 60% load, TCP NewReno, an
    intelligent-buffer leaf preset, with at least 10,000 flows (1,000 quick)."""
    return datamining_bench_scenario(min_flows=1_000 if quick else 10_000, load="60%", seed=1)


def _fattree_cbr(k: int) -> Callable[[bool], Dict[str, Any]]:
    """Scale benchmark (a): a k-ary fat-tree of 320 kb/s links with 100-packet
    queues; k^3/8 open-loop flows (half the hosts, each to the host half the
    fabric away, so every path crosses the core) send one 1000 B frame per
    second each for 1500 s (150 s quick), starts staggered evenly over the
    first second. Cost per event should not grow with k."""

    def build(quick: bool) -> Dict[str, Any]:
        hosts = k ** 3 // 4
        flows = hosts // 2
        wire_bits = (1000 + 20) * 8  # frame plus Ethernet overhead: one frame per second
        traffic = [{"kind": "udp_cbr", "name": "cbr", "src": [f"h{i}"], "dst": f"h{i + hosts // 2}",
                    "rate_bps": wire_bits, "frame_bytes": 1000, "start_ps": i * 1_000_000_000_000 // flows}
                   for i in range(flows)]
        return {
            "name": f"fattree-k{k}-cbr", "seed": 1, "duration_ps": (150 if quick else 1500) * 1_000_000_000_000,
            "drain": True,
            "network": {"switch": {"latency_ps": 500_000,
                                   "buffer": {"model": "static", "port_bytes": 100_000_000, "queue_packets": 100}}},
            "topology": {"kind": "fat_tree", "k": k, "link": {"rate_bps": 320_000, "delay_ps": 1 * US}},
            "traffic": traffic,
            "stats": {"queue_sample_interval_ps": 10_000_000_000_000, "throughput_interval_ps": 100_000_000_000_000},
        }

    return build


def _fattree_cubic(k: int) -> Callable[[bool], Dict[str, Any]]:
    """Scale benchmark (b): a k-ary fat-tree at 10G with 1 us links and
    100-packet queues; every host sends one 1 MB CUBIC flow (100 KB quick) to
    its partner in a random permutation (seeded; no host sends to itself)."""

    def build(quick: bool) -> Dict[str, Any]:
        hosts = k ** 3 // 4
        rng = random.Random(k)
        dst = list(range(hosts))
        while True:
            rng.shuffle(dst)
            if all(i != d for i, d in enumerate(dst)):
                break
        size = 100_000 if quick else 1_000_000
        flows = [{"src": f"h{i}", "dst": f"h{d}", "bytes": size} for i, d in enumerate(dst)]
        return {
            "name": f"fattree-k{k}-cubic", "seed": 1, "duration_ps": 1 * MS, "drain": True,
            "drain_limit_ps": 10_000 * MS,
            "network": {"switch": {"latency_ps": 500_000,
                                   "buffer": {"model": "static", "port_bytes": 100_000_000, "queue_packets": 100}}},
            "topology": {"kind": "fat_tree", "k": k, "link": {"rate_bps": 10 * G, "delay_ps": 1 * US}},
            "tcp": {"cc": "cubic"},
            "traffic": [{"kind": "tcp_flows", "name": "perm", "flows": flows}],
            "stats": {"queue_sample_interval_ps": 100 * US, "throughput_interval_ps": 1 * MS},
        }

    return build


def _leafspine_datamining_80(quick: bool) -> Dict[str, Any]:
    """Scale benchmark (c): ``scenarios/leafspine-datamining.yaml`` as shipped
    (1 s of arrivals) at 80% load (100 ms quick)."""
    path = scenario_path("leafspine-datamining.yaml")
    overrides = ["load=80%"] + (["duration=100ms"] if quick else [])
    resolved = load(path, overrides=overrides).to_resolved()
    resolved["name"] = "leafspine-datamining-80"
    return resolved


SCENARIOS: Dict[str, Callable[[bool], Dict[str, Any]]] = {
    "leafspine-udp": _leafspine_udp,
    "fattree-incast": _fattree_incast,
    "single-port-md1": _single_port_mm1,
    "incast-tcp-16x50MB": _incast_tcp,
    "leafspine-datamining": _leafspine_datamining,
    **{f"fattree-k{k}-cbr": _fattree_cbr(k) for k in (8, 16, 32)},
    **{f"fattree-k{k}-cubic": _fattree_cubic(k) for k in (8, 16, 32)},
    "leafspine-datamining-80": _leafspine_datamining_80,
}

#: The scale benchmarks: families whose cost per event is compared across k.
SCALE_FAMILIES: Dict[str, tuple] = {"fattree-k{}-cbr": (8, 16, 32), "fattree-k{}-cubic": (8, 16, 32)}

#: Bench scenarios that have an ns-3 twin: the arguments of
#: ``python -m fabricsim.validation.ns3``.
NS3_TWINS: Dict[str, List[str]] = {
    "incast-tcp-16x50MB": ["incast", "--senders", "16", "--cc", "newreno"],
}
