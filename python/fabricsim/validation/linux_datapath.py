"""CPU cost of a host's software datapath, measured in real Linux: veth + TCP/IP stack, VXLAN, conntrack.

A small-scale version of configuration (c) of the SDN pipeline comparison
(two servers joined by a VXLAN overlay, connection tracking done by the host
kernel for every packet)::

    server a                                   server b
    iperf3 ── [conntrack] ── vx0 ── eth0 ═════ eth0 ── vx0 ── [conntrack] ── iperf3
                           (VXLAN)   veth underlay, MTU m   (VXLAN)

Four configurations (:data:`CONFIGS`), each at every underlay MTU of the sweep
and with 1 and 4 iperf3 instances:

- ``veth``: TCP straight over the veth (IP packets of m bytes): the stack baseline.
- ``veth+ct``: the same with the stateful firewall in both namespaces.
- ``vxlan``: TCP over the VXLAN tunnel (inner IP packets of m - 50 bytes).
- ``vxlan+ct``: the tunnel with the firewall on the inner flows (the underlay's
  UDP 4789 is exempt, so each packet is tracked once on each server).

Method. Each client/server pair is pinned to one CPU (``taskset``; the
instances alternate between CPUs), so a packet's whole path (send, encap,
veth, decap, receive and the ACK back) runs on that CPU, in the context of
the two iperf3 processes or the CPU's ``ksoftirqd`` thread. The CPU used is
their scheduler run time (iperf3's own getrusage over the test, plus the
ksoftirqd run-time delta); dividing by the data packets that crossed the
underlay (``ip -s link``) gives the CPU time per data packet, its ACK share
included. Other users of the machine do not enter this number (they would
in /proc/stat, which is kept as a cross-check). Per configuration the points
are fitted with ``cost = a + b * L`` (L: the inner IP packet length, the
packet TCP builds); a stage's cost is the difference of two configurations'
fits: VXLAN = vxlan - veth, conntrack = vxlan+ct - vxlan (and veth+ct - veth
as a check).

:func:`record` runs the sweep (root) and writes the raw points, the fits,
their residuals and the throughput curves to
``fabricsim/validation/data/linux_datapath.json``.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from fabricsim.validation.linux import (
    VXLAN_OVERHEAD,
    Iperf3Job,
    Lab,
    LabError,
    Topology,
    environment,
)

__all__ = [
    "CONFIGS",
    "DATA",
    "MTUS",
    "Point",
    "curves",
    "fit",
    "fit_with_acks",
    "load",
    "measure_point",
    "profile_point",
    "record",
    "stage_costs",
]

#: Where :func:`record` writes (and the host model reads) the measurements.
DATA = Path(__file__).resolve().parent / "data" / "linux_datapath.json"
#: The underlay (wire) MTU sweep: ten sizes from 96 to 9000 B.
MTUS = (96, 192, 256, 512, 1024, 1500, 2048, 4096, 8192, 9000)
CONFIGS = ("veth", "veth+ct", "vxlan", "vxlan+ct")
#: TCP/IPv4 header with the timestamp option, as Linux sends it.
TCP_IP_HEADER = 52
#: Linux refuses an MSS below this (net.ipv4.tcp_min_snd_mss, whose floor is 48).
MIN_SND_MSS = 48


def smallest_ip_mtu() -> int:
    """The smallest IP MTU that carries TCP with timestamps without exceeding the MTU.

    Linux computes MSS = MTU - 40 and raises it to ``tcp_min_snd_mss`` (48),
    then takes 12 B of timestamp option out: below 88 B the segments it
    builds are larger than the MTU and never leave the host.
    """
    return MIN_SND_MSS + 40


def topology(config: str, mtu: int) -> Topology:
    """Two servers ``a`` and ``b`` on one veth of MTU ``mtu``, with the tunnel and firewall of ``config``."""
    if config not in CONFIGS:
        raise LabError(f"config: unknown value {config!r}; allowed: {', '.join(CONFIGS)}")
    data: dict[str, Any] = {
        "hosts": ["a", "b"],
        "links": [{"a": "a", "b": "b", "mtu": mtu}],
        "steering": "none",
        "sysctls": {"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"},
    }
    if config.startswith("vxlan"):
        data["tunnels"] = [{"a": "a", "b": "b", "vni": 42, "mtu": mtu - VXLAN_OVERHEAD}]
    if config.endswith("+ct"):
        data["conntrack"] = ["a", "b"]
    return Topology.from_dict(data)


def inner_mtu(config: str, mtu: int) -> int:
    return mtu - VXLAN_OVERHEAD if config.startswith("vxlan") else mtu


@dataclass(frozen=True)
class Point:
    """One measured (config, MTU, instances) point, averaged over its repeats."""

    config: str
    mtu: int
    requested_mtu: int
    inner_mtu: int
    instances: int
    repeats: int
    duration_s: float
    goodput_bps: float
    data_packets_per_s: float
    ack_packets_per_s: float
    payload_bytes_per_packet: float
    inner_packet_bytes: float
    cpu_s_per_s: float
    cpu_ns_per_packet: float
    cpu_ns_per_packet_sd: float
    system_busy_s_per_s: float
    other_users_cpu_s_per_s: float
    ksoftirqd_share: float
    retransmits: int
    load_average: float
    conntrack_invalid: int


def measure_point(
    config: str, mtu: int, instances: int, duration_s: float = 5.0, repeats: int = 2, requested_mtu: Optional[int] = None
) -> Point:
    """Measure one point: ``instances`` iperf3 pairs (pinned to CPUs 0, 1, 0, 1, ...) for ``duration_s``."""
    import os

    cpus = os.cpu_count() or 1
    samples = []
    for _ in range(repeats):
        with Lab(topology(config, mtu)) as lab:
            tunnel = config.startswith("vxlan")
            jobs = [
                Iperf3Job(src="a", dst="b", cc="cubic", duration_s=duration_s, tunnel=tunnel, cpu=i % cpus)
                for i in range(instances)
            ]
            run = lab.iperf3(jobs)
            underlay = run.links["a"][lab.device("a", "b")]
            invalid = 0
            if config.endswith("+ct"):
                for node in ("a", "b"):
                    text = lab.run(node, ["nft", "-j", "list", "counters"]).stdout
                    invalid += _nft_counter_packets(text)
            samples.append((run, underlay, invalid))
    rows = []
    for run, underlay, invalid in samples:
        seconds = run.wall_s
        data = underlay.tx_packets
        acks = underlay.rx_packets
        tcp_bytes = sum(f.bytes_received for f in run.flows)
        cpu = run.iperf3_cpu_s + run.cpu.ksoftirqd_s
        rows.append(
            {
                "goodput": run.total_goodput_bps,
                "pps": data / seconds,
                "acks": acks / seconds,
                "payload": tcp_bytes / data if data else float("nan"),
                "cpu_rate": cpu / seconds,
                "ns": 1e9 * cpu / data if data else float("nan"),
                "busy": run.cpu.busy_s / seconds,
                "ksoft": run.cpu.ksoftirqd_s / cpu if cpu else 0.0,
                "retx": run.total_retransmits,
                "load": run.load_before[0],
                "invalid": invalid,
            }
        )

    def mean(key: str) -> float:
        return statistics.fmean(row[key] for row in rows)

    payload = mean("payload")
    return Point(
        config=config,
        mtu=mtu,
        requested_mtu=requested_mtu or mtu,
        inner_mtu=inner_mtu(config, mtu),
        instances=instances,
        repeats=repeats,
        duration_s=duration_s,
        goodput_bps=mean("goodput"),
        data_packets_per_s=mean("pps"),
        ack_packets_per_s=mean("acks"),
        payload_bytes_per_packet=payload,
        inner_packet_bytes=payload + TCP_IP_HEADER,
        cpu_s_per_s=mean("cpu_rate"),
        cpu_ns_per_packet=mean("ns"),
        cpu_ns_per_packet_sd=statistics.stdev(row["ns"] for row in rows) if len(rows) > 1 else 0.0,
        system_busy_s_per_s=mean("busy"),
        other_users_cpu_s_per_s=max(0.0, mean("busy") - mean("cpu_rate")),
        ksoftirqd_share=mean("ksoft"),
        retransmits=sum(row["retx"] for row in rows),
        load_average=mean("load"),
        conntrack_invalid=sum(row["invalid"] for row in rows),
    )


def _nft_counter_packets(text: str) -> int:
    total = 0
    for item in json.loads(text or "{}").get("nftables", []):
        counter = item.get("counter")
        if counter:
            total += int(counter.get("packets", 0))
    return total


def working_mtu(config: str, mtu: int) -> tuple[int, str]:
    """``mtu`` if TCP works over ``config`` at that underlay MTU, else the smallest that does, and why."""
    floor = smallest_ip_mtu() + (VXLAN_OVERHEAD if config.startswith("vxlan") else 0)
    if mtu >= floor:
        return mtu, ""
    return floor, (
        f"underlay MTU {mtu} B leaves an inner MTU of {inner_mtu(config, mtu)} B; TCP with timestamps needs "
        f"{smallest_ip_mtu()} B (MSS >= {MIN_SND_MSS}), so {floor} B is used"
    )


# --------------------------------------------------------------------------- profile cross-check

#: Kernel and library functions by the stage they belong to (first match wins), for the
#: sampled profile that cross-checks the stage costs found by differences.
STAGE_SYMBOLS = (
    ("conntrack+nftables", r"^_*nf_|^_*nft_|conntrack|^_*ct_"),
    ("vxlan+outer udp", r"vxlan|udp_tunnel|iptunnel|ip_tunnel|gro_cell|^_*udp|skb_tunnel|INET_ECN"),
    ("checksum", r"csum|checksum"),
    ("copy", r"copy_user|_copy_to_iter|_copy_from_iter|copyout|copyin|memcpy|memmove|rep_movs|skb_copy_datagram"),
    ("tcp", r"tcp"),
    ("segmentation", r"skb_segment|gso|validate_xmit"),
    ("ip+routing", r"^_*ip_|^_*ip4|fib_|^_*dst_|^_*rt_|^_*inet_|^raw_|^ipv4_"),
    ("veth+device", r"veth|netif|^_*dev_|napi|net_rx|backlog|qdisc|neigh|^eth_"),
    ("skb+memory", r"skb|slab|kmem|kfree|alloc|page|memcg|mem_cgroup|sk_mem"),
    # With cpu-clock sampling in a VM, time spent with interrupts off shows up where they are re-enabled.
    ("irq-enable+locks", r"spin_unlock|spin_lock|rcu_read|irqrestore|local_bh"),
    ("syscall+scheduler", r"sys_|syscall|entry_|schedule|sched|switch|wake|futex|poll|select|rseq|irq"),
)


def classify_symbol(symbol: str) -> str:
    """The stage of a sampled function (``other`` when no pattern matches)."""
    import re

    for stage, pattern in STAGE_SYMBOLS:
        if re.search(pattern, symbol):
            return stage
    return "other"


def parse_perf_report(text: str, comms: Sequence[str]) -> dict[str, float]:
    """Share of the samples of each function, from ``perf report --stdio --sort comm,sym -F overhead,comm,sym``.

    Only samples of the given commands count; the shares add up to 1.
    """
    totals: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or line.startswith("#") or not parts[0].endswith("%"):
            continue
        share, comm, symbol = float(parts[0][:-1]), parts[1], parts[-1]
        if comm in comms:
            totals[symbol] = totals.get(symbol, 0.0) + share
    whole = sum(totals.values())
    return {symbol: value / whole for symbol, value in totals.items()} if whole else {}


def stage_shares(symbols: dict[str, float]) -> dict[str, float]:
    """Function shares summed by stage (:data:`STAGE_SYMBOLS`)."""
    out: dict[str, float] = {}
    for symbol, share in symbols.items():
        stage = classify_symbol(symbol)
        out[stage] = out.get(stage, 0.0) + share
    return dict(sorted(out.items()))


def profile_point(config: str, mtu: int, duration_s: float = 4.0) -> dict[str, Any]:
    """Sample where the CPU goes (``perf record -e cpu-clock``) for one iperf3 pair; shares per stage."""
    import os
    import signal
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        with Lab(topology(config, mtu)) as lab:
            perf = subprocess.Popen(
                ["perf", "record", "-e", "cpu-clock", "-F", "1999", "-a", "-o", data],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                run = lab.iperf3(
                    [Iperf3Job("a", "b", cc="cubic", duration_s=duration_s, tunnel=config.startswith("vxlan"), cpu=0)]
                )
            finally:
                perf.send_signal(signal.SIGINT)
                perf.wait(timeout=30)
        report = subprocess.run(
            ["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "comm,sym", "-F", "overhead,comm,sym"],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    underlay_packets = max(1, run.links["a"]["eth0"].tx_packets)
    ns_per_packet = 1e9 * (run.iperf3_cpu_s + run.cpu.ksoftirqd_s) / underlay_packets
    symbols = parse_perf_report(report, ("iperf3", "ksoftirqd/0", "ksoftirqd/1"))
    shares = stage_shares(symbols)
    top = sorted(symbols.items(), key=lambda item: -item[1])[:80]
    return {
        "config": config,
        "mtu": mtu,
        "cpu_ns_per_packet": ns_per_packet,
        "symbols": dict(top),
        "shares": shares,
        "ns_per_packet_by_stage": {stage: share * ns_per_packet for stage, share in shares.items()},
    }


# --------------------------------------------------------------------------- fitting


def fit(points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Least-squares ``cpu_ns_per_packet = a + b * inner_packet_bytes``, with residuals."""
    xs = [p["inner_packet_bytes"] for p in points]
    ys = [p["cpu_ns_per_packet"] for p in points]
    n = len(xs)
    if n < 2:
        raise LabError("fit: need at least two points")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    b = sxy / sxx
    a = my - b * mx
    residuals = [y - (a + b * x) for x, y in zip(xs, ys)]
    dof = max(1, n - 2)
    s2 = sum(r * r for r in residuals) / dof
    se_b = math.sqrt(s2 / sxx)
    se_a = math.sqrt(s2 * (1 / n + mx * mx / sxx))
    ss_tot = sum((y - my) ** 2 for y in ys)
    return {
        "a_ns": a,
        "b_ns_per_byte": b,
        "a_se_ns": se_a,
        "b_se_ns_per_byte": se_b,
        "r2": 1 - sum(r * r for r in residuals) / ss_tot if ss_tot else 1.0,
        "points": n,
        "residuals": [
            {"mtu": p["mtu"], "x": x, "y": y, "residual_ns": r, "relative": r / y if y else float("nan")}
            for p, x, y, r in zip(points, xs, ys, residuals)
        ],
    }


def fit_with_acks(points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Least squares ``cpu_ns_per_packet = a_data + a_ack * r + b * L`` (r: ACKs per data packet).

    The ACK rate per data packet changes along the sweep (a few per data
    packet at the smallest MTU, one per hundred at 1500 B when the receiver
    acknowledges in bursts), which separates the cost of a data packet from
    that of an ACK. Standard errors from the residual variance.
    """
    import numpy as np

    rows = [(1.0, p["ack_packets_per_s"] / p["data_packets_per_s"], p["inner_packet_bytes"]) for p in points]
    x = np.array(rows)
    y = np.array([p["cpu_ns_per_packet"] for p in points])
    if len(y) < 4:
        raise LabError("fit_with_acks: need at least four points")
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    residuals = y - x @ coef
    s2 = float(residuals @ residuals) / (len(y) - 3)
    cov = s2 * np.linalg.inv(x.T @ x)
    se = np.sqrt(np.diag(cov))
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return {
        "a_data_ns": float(coef[0]),
        "a_ack_ns": float(coef[1]),
        "b_ns_per_byte": float(coef[2]),
        "a_data_se_ns": float(se[0]),
        "a_ack_se_ns": float(se[1]),
        "b_se_ns_per_byte": float(se[2]),
        "r2": 1 - float(residuals @ residuals) / ss_tot if ss_tot else 1.0,
        "points": len(y),
        "residuals": [
            {"mtu": p["mtu"], "acks_per_packet": r[1], "y": float(v), "residual_ns": float(e), "relative": float(e / v)}
            for p, r, v, e in zip(points, rows, y, residuals)
        ],
    }


def stage_costs(fits: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per-stage costs from configuration fits (differences of ``a`` and ``b``, errors added in quadrature)."""

    def diff(hi: str, lo: str) -> dict[str, float]:
        f, g = fits[hi], fits[lo]
        return {
            "per_packet_ns": f["a_ns"] - g["a_ns"],
            "per_packet_se_ns": math.hypot(f["a_se_ns"], g["a_se_ns"]),
            "per_byte_ns": f["b_ns_per_byte"] - g["b_ns_per_byte"],
            "per_byte_se_ns": math.hypot(f["b_se_ns_per_byte"], g["b_se_ns_per_byte"]),
        }

    out = {
        "stack_veth": {
            "per_packet_ns": fits["veth"]["a_ns"],
            "per_packet_se_ns": fits["veth"]["a_se_ns"],
            "per_byte_ns": fits["veth"]["b_ns_per_byte"],
            "per_byte_se_ns": fits["veth"]["b_se_ns_per_byte"],
        }
    }
    if "vxlan" in fits:
        out["vxlan_encap_decap"] = diff("vxlan", "veth")
    if "vxlan+ct" in fits and "vxlan" in fits:
        out["conntrack"] = diff("vxlan+ct", "vxlan")
    if "veth+ct" in fits:
        out["conntrack_without_vxlan"] = diff("veth+ct", "veth")
    return out


# --------------------------------------------------------------------------- the whole sweep


def record(
    out: Path = DATA,
    mtus: Sequence[int] = MTUS,
    configs: Sequence[str] = CONFIGS,
    instances: Sequence[int] = (1, 4),
    duration_s: float = 5.0,
    repeats: int = 2,
    progress: bool = True,
    profile: bool = True,
) -> dict[str, Any]:
    """Run the sweep, fit, and write ``out`` (JSON). Needs root (and ``perf`` for the profiles)."""
    env: dict[str, Any] = {}
    with Lab(topology("veth", 1500)) as lab:
        env = environment(lab, "a")
    points: list[dict[str, Any]] = []
    notes: list[str] = []
    for config in configs:
        for requested in mtus:
            mtu, why = working_mtu(config, requested)
            if why:
                notes.append(f"{config}: {why}")
            for count in instances:
                point = measure_point(config, mtu, count, duration_s, repeats, requested_mtu=requested)
                points.append(asdict(point))
                if progress:
                    print(
                        f"{config:9s} mtu {mtu:5d} x{count}: {point.goodput_bps / 1e9:6.3f} Gbps "
                        f"{point.data_packets_per_s / 1e3:7.1f} kpps {point.cpu_ns_per_packet:8.0f} ns/pkt "
                        f"(others use {point.other_users_cpu_s_per_s:.2f} CPUs)",
                        flush=True,
                    )
    profiles = []
    if profile:
        for config in configs:
            for mtu in (1500, 9000):
                profiles.append(profile_point(config, mtu, duration_s))
    settings = {"duration_s": duration_s, "repeats": repeats}
    return write(out, env, points, notes, settings, profiles)


def write(
    out: Path,
    env: dict[str, Any],
    points: list[dict[str, Any]],
    notes: list[str],
    settings: dict[str, Any],
    profiles: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Fit the points and write everything to ``out``."""
    fits: dict[str, dict[str, Any]] = {}
    fits_acks: dict[str, dict[str, Any]] = {}
    for count in sorted({p["instances"] for p in points}):
        for config in CONFIGS:
            chosen = [p for p in points if p["config"] == config and p["instances"] == count]
            if len(chosen) >= 2:
                fits[f"{config}/x{count}"] = fit(chosen)
            if len(chosen) >= 4:
                fits_acks[f"{config}/x{count}"] = fit_with_acks(chosen)
    single = {k.split("/")[0]: v for k, v in fits.items() if k.endswith("/x1")}
    document = {
        "description": "CPU cost per packet of a Linux host datapath: veth + TCP/IP stack, VXLAN, conntrack",
        "method": __doc__.split("Method.")[1].split(":func:`record`")[0].strip() if __doc__ else "",
        "units": {
            "cpu_ns_per_packet": "CPU nanoseconds per TCP data packet, its ACK share included, both ends",
            "inner_packet_bytes": "IP packet built by TCP (payload + 52 B of IPv4/TCP/timestamp headers)",
            "fits": "cpu_ns_per_packet = a_ns + b_ns_per_byte * inner_packet_bytes",
            "fits_with_acks": "cpu_ns_per_packet = a_data_ns + a_ack_ns * acks_per_data_packet "
            "+ b_ns_per_byte * inner_packet_bytes",
        },
        "environment": env,
        "settings": settings,
        "notes": notes,
        "fits": fits,
        "stages": stage_costs(single) if "veth" in single else {},
        "stages_4_instances": stage_costs({k.split("/")[0]: v for k, v in fits.items() if k.endswith("/x4")})
        if any(k == "veth/x4" for k in fits)
        else {},
        "fits_with_acks": fits_acks,
        "points": points,
        "profiles": list(profiles),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1) + "\n")
    return document


def markdown(document: dict[str, Any]) -> str:
    """Tables of a recorded document, for docs/validation/linux-datapath.md."""
    lines = ["### Stage costs (1 instance)", "", "| stage | a (ns/packet) | b (ns/byte) |", "|---|---:|---:|"]
    for key in ("stages", "stages_4_instances"):
        if key == "stages_4_instances":
            lines += ["", "### Stage costs (4 instances)", "", "| stage | a (ns/packet) | b (ns/byte) |", "|---|---:|---:|"]
        for stage, cost in document.get(key, {}).items():
            lines.append(
                f"| {stage} | {cost['per_packet_ns']:.0f} ± {cost['per_packet_se_ns']:.0f} "
                f"| {cost['per_byte_ns']:.4f} ± {cost['per_byte_se_ns']:.4f} |"
            )
    lines += ["", "### Fits", "", "| config | a (ns) | b (ns/B) | R² | largest residual |", "|---|---:|---:|---:|---:|"]
    for name, f in document["fits"].items():
        worst = max(f["residuals"], key=lambda r: abs(r["relative"]))
        lines.append(
            f"| {name} | {f['a_ns']:.0f} ± {f['a_se_ns']:.0f} | {f['b_ns_per_byte']:.4f} ± {f['b_se_ns_per_byte']:.4f} "
            f"| {f['r2']:.3f} | {100 * worst['relative']:+.1f}% at MTU {worst['mtu']} |"
        )
    if document.get("fits_with_acks"):
        lines += [
            "",
            "### Fits with the ACKs separated",
            "",
            "| config | a_data (ns) | a_ack (ns) | b (ns/B) | R² | largest residual |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, f in document["fits_with_acks"].items():
            worst = max(f["residuals"], key=lambda r: abs(r["relative"]))
            lines.append(
                f"| {name} | {f['a_data_ns']:.0f} ± {f['a_data_se_ns']:.0f} | {f['a_ack_ns']:.0f} ± {f['a_ack_se_ns']:.0f} "
                f"| {f['b_ns_per_byte']:.4f} ± {f['b_se_ns_per_byte']:.4f} | {f['r2']:.3f} "
                f"| {100 * worst['relative']:+.1f}% at MTU {worst['mtu']} |"
            )
    lines += [
        "",
        "### Points",
        "",
        "| config | inst. | MTU (asked) | inner IP B | Gbps | kpps | ACKs/packet | CPUs used | Gbps per CPU "
        "| kpps per CPU | ns/packet | fit residual | retx | others' CPUs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in document["points"]:
        f = document["fits"].get(f"{p['config']}/x{p['instances']}")
        residual = next((r["relative"] for r in f["residuals"] if r["mtu"] == p["mtu"]), float("nan")) if f else float("nan")
        asked = f"{p['mtu']}" + (f" ({p['requested_mtu']})" if p["requested_mtu"] != p["mtu"] else "")
        lines.append(
            f"| {p['config']} | {p['instances']} | {asked} | {p['inner_packet_bytes']:.0f} | {p['goodput_bps'] / 1e9:.3f} "
            f"| {p['data_packets_per_s'] / 1e3:.1f} | {p['ack_packets_per_s'] / p['data_packets_per_s']:.3f} "
            f"| {p['cpu_s_per_s']:.2f} | {p['goodput_bps'] / 1e9 / p['cpu_s_per_s']:.3f} "
            f"| {p['data_packets_per_s'] / 1e3 / p['cpu_s_per_s']:.0f} "
            f"| {p['cpu_ns_per_packet']:.0f} ± {p['cpu_ns_per_packet_sd']:.0f} | {100 * residual:+.1f}% "
            f"| {p['retransmits']} | {p.get('other_users_cpu_s_per_s', p['system_busy_s_per_s'] - p['cpu_s_per_s']):.2f} |"
        )
    if document.get("profiles"):
        stages = sorted({s for prof in document["profiles"] for s in prof["shares"]})
        lines += ["", "### Sampled profile (ns per packet by stage)", ""]
        lines += ["| config | MTU | total | " + " | ".join(stages) + " |", "|---|---:|---:|" + "---:|" * len(stages)]
        for prof in document["profiles"]:
            cells = " | ".join(f"{prof['ns_per_packet_by_stage'].get(s, 0.0):.0f}" for s in stages)
            lines.append(f"| {prof['config']} | {prof['mtu']} | {prof['cpu_ns_per_packet']:.0f} | {cells} |")
    return "\n".join(lines)


def curves(document: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
    """Throughput against MTU per configuration and instance count, as the host model must predict it.

    Each row: ``config``, ``instances``, ``mtu`` (underlay, as used), ``requested_mtu``,
    ``goodput_gbps``, ``packets_per_s`` (data packets), ``cpu_share`` (CPUs the
    pairs actually got: the machine is shared), and the same throughput per
    CPU-second (``goodput_gbps_per_cpu``, ``packets_per_cpu_s``), which does not
    depend on how busy the machine was.
    """
    document = document or load()
    rows = []
    for p in document["points"]:
        share = p["cpu_s_per_s"]
        rows.append(
            {
                "config": p["config"],
                "instances": p["instances"],
                "mtu": p["mtu"],
                "requested_mtu": p["requested_mtu"],
                "goodput_gbps": p["goodput_bps"] / 1e9,
                "packets_per_s": p["data_packets_per_s"],
                "cpu_share": share,
                "goodput_gbps_per_cpu": p["goodput_bps"] / 1e9 / share if share else float("nan"),
                "packets_per_cpu_s": p["data_packets_per_s"] / share if share else float("nan"),
            }
        )
    return rows


def load(path: Path = DATA) -> dict[str, Any]:
    """The recorded datapath measurements (no root needed)."""
    return json.loads(path.read_text())


def _main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m fabricsim.validation.linux_datapath")
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--mtu", type=int, action="append", help="underlay MTUs (default: the ten of the sweep)")
    parser.add_argument("--config", action="append", choices=CONFIGS)
    parser.add_argument("--instances", type=int, action="append")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-profile", action="store_true", help="skip the perf profiles")
    parser.add_argument("--markdown", action="store_true", help="print the tables of the recorded file and exit")
    parser.add_argument("--refit", action="store_true", help="fit the recorded points again (no measurement)")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(load(args.out)))
        return 0
    if args.refit:
        old = load(args.out)
        write(args.out, old["environment"], old["points"], old["notes"], old["settings"], old.get("profiles", ()))
        return 0
    record(
        args.out,
        args.mtu or MTUS,
        args.config or CONFIGS,
        args.instances or (1, 4),
        args.duration,
        args.repeats,
        profile=not args.no_profile,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
