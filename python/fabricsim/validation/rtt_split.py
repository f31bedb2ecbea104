"""Where a dumbbell's round trip is spent: the router, the receiver, the ACK path.

The dumbbell's bottleneck (:mod:`fabricsim.validation.linux_dumbbell`) is
the bfifo on the router's port towards ``rx``. Capturing every frame the
router ``r`` sends and receives on its ports (Linux: ``tcpdump`` on the
router namespace's veths; the twin: a ``stats.pcap`` tap on ``r``) splits
the round trip of each new data segment into

- **router**: the segment's arrival at the router (its tap on the
  sender-facing port) to its departure towards ``rx``: the bfifo's sojourn
  (and, in Linux, any wait in the router's CPU input backlog);
- **receiver**: its departure towards ``rx`` to the arrival at the router
  of the first ACK from ``rx`` that covers it: everything on the receiving
  host (its CPU backlog, TCP's ACK rules, the reading application) and the
  two veth/link crossings;
- **ACK path**: that ACK's arrival at the router to its departure towards
  the sender;

and reports, per ACK that reaches a sender and moves its window, the time to
the next new data segment the router sees from that sender (the sender's
reaction; in Linux its CPU backlog and TCP's transmit path). Only first
transmissions count, and only those that left the router within 10 ms (a
dropped segment's later retransmission is not a sojourn).

A Linux timestamp at a veth's ingress is taken when the packet is processed
(or queued for processing) in the router namespace, at its egress when it
is handed to the veth: the split places a CPU backlog's wait on the side
where it happens, within the kernel's timestamping. The twin's timestamps
are its frames' arrival and departure times at ``r``.

:func:`capture_run` runs one Linux dumbbell with a short capture (root, the
lab); :func:`lab_split` and :func:`twin_split` compute the split from the
files or from a twin run, with :func:`trains`: how each sender's data
arrives at the router (gaps between a flow's segments, train lengths).
"""

from __future__ import annotations

import json
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

#: Columns of a frame array: time (s), source address, source port,
#: destination port, sequence number, acknowledgment number, payload bytes, frame bytes.
T, SRC, SPORT, DPORT, SEQ, ACK, LEN, SIZE = range(8)

#: A segment that left the router more than this after it arrived was dropped and retransmitted.
MAX_SOJOURN_S = 0.010


def read_pcap(path: Path) -> np.ndarray:
    """The TCP/IPv4 frames of a pcap file (micro- or nanosecond; Ethernet or
    Linux cooked) as an array of the columns above; the time is taken modulo
    10^6 s so that nanoseconds survive in a float."""
    data = Path(path).read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise ValueError(f"{path}: not a little-endian pcap file")
    scale = 1e-9 if magic == 0xA1B23C4D else 1e-6
    linktype = struct.unpack("<I", data[20:24])[0]
    l2 = {1: 14, 113: 16}.get(linktype)
    if l2 is None:
        raise ValueError(f"{path}: link type {linktype} (Ethernet or Linux cooked only)")
    rows = []
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack("<IIII", data[off : off + 16])
        off += 16
        pkt = data[off : off + incl]
        off += incl
        if linktype == 1 and pkt[12:14] != b"\x08\x00":
            continue
        ip = pkt[l2:]
        if len(ip) < 20 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total = struct.unpack("!H", ip[2:4])[0]
        tcp = ip[ihl:]
        if len(tcp) < 13:
            continue
        sport, dport, seq, ack = struct.unpack("!HHII", tcp[:12])
        doff = (tcp[12] >> 4) * 4
        src = struct.unpack("!I", ip[12:16])[0]
        rows.append((sec % 1_000_000 + frac * scale, src, sport, dport, seq, ack, total - ihl - doff, orig))
    return np.array(rows, dtype=np.float64).reshape(-1, 8)


def _first_cover(times: np.ndarray, acks: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each sequence number in ``ends``, the first time ``acks`` (cumulative) reached it; NaN if never."""
    reached = np.maximum.accumulate(acks) if len(acks) else acks
    i = np.searchsorted(reached, ends, side="left")
    out = np.full(len(ends), np.nan)
    ok = i < len(reached)
    out[ok] = times[i[ok]]
    return out


def split(sender_ports: Sequence[np.ndarray], rx_port: np.ndarray, skip_s: float = 0.0) -> dict[str, float]:
    """The round-trip split (module docs) from the frames the router sent and
    received on each sender-facing port and on the port towards ``rx``,
    skipping the first ``skip_s`` seconds (e.g. slow start)."""
    everything = [p for p in sender_ports if len(p)] + [rx_port]
    t0 = max(p[:, T].min() for p in everything) + skip_s + 0.005
    t1 = min(p[:, T].max() for p in everything) - 0.020
    data_out = rx_port[rx_port[:, LEN] > 0]
    data_sources = np.unique(data_out[:, SRC])
    parts, reactions = [], []
    for port in sender_ports:
        data_in = port[port[:, LEN] > 0]
        if not len(data_in):
            continue
        acks_out = port[(port[:, LEN] == 0) & ~np.isin(port[:, SRC], data_sources)]
        flow = data_in[0, SPORT]
        departed = data_out[data_out[:, SPORT] == flow]
        acks_in = rx_port[(rx_port[:, LEN] == 0) & (rx_port[:, DPORT] == flow)]
        base = data_in[0, SEQ]

        def rel(x: np.ndarray) -> np.ndarray:
            return ((x - base + 2**31) % 2**32) - 2**31

        ends_in = rel(data_in[:, SEQ] + data_in[:, LEN])
        before = np.r_[-np.inf, np.maximum.accumulate(ends_in)[:-1]]
        new = ends_in > before
        chosen = new & (data_in[:, T] > t0) & (data_in[:, T] < t1)
        ends, arrived = ends_in[chosen], data_in[chosen, T]
        left = _first_cover(departed[:, T], rel(departed[:, SEQ] + departed[:, LEN]), ends)
        acked = _first_cover(acks_in[:, T], rel(acks_in[:, ACK]), ends)
        forwarded = _first_cover(acks_out[:, T], rel(acks_out[:, ACK]), ends)
        ok = ~(np.isnan(left) | np.isnan(acked) | np.isnan(forwarded)) & (left >= arrived)
        ok &= left - arrived < MAX_SOJOURN_S
        parts.append(np.c_[left - arrived, acked - left, forwarded - acked][ok])
        # The sender's reaction: window-moving ACKs to the next new data segment.
        if len(acks_out):
            moved = np.r_[True, np.diff(np.maximum.accumulate(rel(acks_out[:, ACK]))) > 0]
            at = acks_out[moved & (acks_out[:, T] > t0) & (acks_out[:, T] < t1), T]
            new_times = data_in[new, T]
            j = np.searchsorted(new_times, at)
            reactions.append(new_times[j[j < len(new_times)]] - at[j < len(new_times)])
    if not parts:
        raise ValueError("no data segment crossed the router in the window")
    p = np.concatenate(parts)
    react = np.concatenate(reactions) if reactions else np.zeros(0)
    return {
        "segments": float(len(p)),
        "router_us": float(p[:, 0].mean() * 1e6),
        "receiver_us": float(p[:, 1].mean() * 1e6),
        "receiver_p50_us": float(np.median(p[:, 1]) * 1e6),
        "receiver_p90_us": float(np.percentile(p[:, 1], 90) * 1e6),
        "ack_path_us": float(p[:, 2].mean() * 1e6),
        "total_us": float(p.sum(axis=1).mean() * 1e6),
        "sender_reaction_p50_us": float(np.median(react) * 1e6) if len(react) else float("nan"),
    }


def trains(sender_ports: Sequence[np.ndarray], gap_s: float = 20e-6) -> dict[str, float]:
    """How each sender's data reaches the router: quantiles of the gaps
    between a flow's consecutive data segments, and the mean length of its
    trains (segments less than ``gap_s`` apart), weighted by segment (the
    train the average segment arrives in)."""
    gaps, sizes = [], []
    for port in sender_ports:
        t = np.sort(port[port[:, LEN] > 0, T])
        if len(t) < 2:
            continue
        g = np.diff(t)
        gaps.append(g)
        starts = np.r_[0, np.nonzero(g > gap_s)[0] + 1]
        sizes.append(np.diff(np.r_[starts, len(t)]))
    g, n = np.concatenate(gaps), np.concatenate(sizes)
    p25, p50, p75, p90 = np.percentile(g, [25, 50, 75, 90]) * 1e6
    return {
        "gap_p25_us": float(p25),
        "gap_p50_us": float(p50),
        "gap_p75_us": float(p75),
        "gap_p90_us": float(p90),
        "train_segments": float((n**2).sum() / n.sum()),
    }


def lab_split(directory: Path, tag: str, senders: int) -> dict[str, float]:
    """:func:`split` of the files :func:`capture_run` wrote."""
    ports = [read_pcap(Path(directory) / f"{tag}-s{i}.pcap") for i in range(senders)]
    return {**split(ports, read_pcap(Path(directory) / f"{tag}-rx.pcap")), **trains(ports)}


def twin_arrays(captures: Any, senders: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The frames of a twin's ``captures`` table (a tap on ``r``, both ways)
    as :func:`split` takes them: ports 0..senders-1 face the senders, port
    ``senders`` faces ``rx`` (the order :func:`linux_dumbbell.scenario` links them)."""
    import polars as pl

    tcp = captures.filter(pl.col("kind") == 1)

    def frames(df: Any) -> np.ndarray:
        cols = ["time_ps", "src_id", "sport", "dport", "tcp_seq", "tcp_ack", "tcp_len", "size"]
        a = np.c_[tuple(df[c].to_numpy().astype(np.float64) for c in cols)]
        a[:, T] /= 1e12
        return a.reshape(-1, 8)

    return [frames(tcp.filter(pl.col("port") == i)) for i in range(senders)], frames(tcp.filter(pl.col("port") == senders))


def twin_split(
    record: dict[str, Any],
    seed: int = 1,
    duration_s: float = 4.0,
    skip_s: float = 1.0,
    tcp: Optional[dict[str, Any]] = None,
    host: str = "ideal",
) -> dict[str, float]:
    """:func:`split` of the lab twin of a recorded experiment
    (:func:`linux_dumbbell.lab_twin`, ``tcp`` overriding its fields) run for
    ``duration_s`` with a tap on the router, skipping the first ``skip_s``;
    ``host``: a value of the twin grid's host dimension
    (:data:`linux_dumbbell.GRID_DIMENSIONS`, e.g. ``lab-machine-gso64k``: the
    hosts on the lab machine, where the receiving application runs on its
    core)."""
    from fabricsim.runner import run
    from fabricsim.schema import from_dict
    from fabricsim.validation import linux_dumbbell as ld

    setup, sc = ld.twin_scenario(record, seed, tcp, host, duration_s=duration_s)
    sc["stats"]["pcap"] = [{"node": "r", "direction": "both", "snaplen": "80B", "format": "pcap", "max_packets": 5_000_000}]
    result = run(from_dict(sc), seed=seed)
    ports, rx = twin_arrays(result.tables()["captures"], setup.senders)
    late = [p[p[:, T] > p[0, T] + skip_s] if len(p) else p for p in ports]
    return {**split(ports, rx, skip_s=skip_s), **trains(late)}


def capture_run(
    cc: str,
    senders: int,
    out: Path,
    tag: str,
    duration_s: float = 12.0,
    at_s: float = 6.0,
    length_s: float = 1.5,
    rate: str = "1Gbps",
    buffer: str = "250KB",
    nice: int = -10,
) -> dict[str, Any]:
    """One unpaced Linux dumbbell (root) with ``tcpdump`` (80-byte snaplen,
    nanosecond stamps) on each of the router's veths for ``length_s`` from
    ``at_s`` into the run; writes ``<tag>-s<i>.pcap`` and ``<tag>-rx.pcap``
    to ``out`` and returns the run's counters (whole run; the bfifo's drops
    also over the capture) with tcpdump's CPU seconds and kernel drops."""
    from fabricsim.validation import linux_dumbbell as ld
    from fabricsim.validation.linux import Lab

    setup = ld.DumbbellSetup(senders=senders, cc=cc, rate=rate, buffer=buffer, duration_s=duration_s, unpaced=True)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = {"setup": setup.name, "tcpdump": {}}
    with Lab(ld.topology(setup), nice=nice) as lab:
        router = lab.ns("r")
        devices = {peer: lab.device("r", peer) for peer in [f"s{i}" for i in range(senders)] + ["rx"]}

        def bfifo_drops() -> int:
            text = subprocess.run(
                ["ip", "netns", "exec", router, "tc", "-s", "-j", "qdisc", "show", "dev", devices["rx"]],
                capture_output=True,
                text=True,
            ).stdout
            return sum(int(q.get("drops", 0)) for q in json.loads(text) if q.get("kind") == "bfifo")

        def capture() -> None:
            time.sleep(at_s)
            before = bfifo_drops()
            procs = []
            for peer, dev in devices.items():
                cmd = (
                    f"TIMEFORMAT='%U %S'; time timeout {length_s} tcpdump -n -q -i {dev} -s 80 "
                    f"--time-stamp-precision=nano -w {out / f'{tag}-{peer}.pcap'} 2>&1"
                )
                argv = ["ip", "netns", "exec", router, "bash", "-c", cmd]
                procs.append((peer, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            for peer, proc in procs:
                stdout, stderr = proc.communicate()
                user, system = (float(x) for x in stderr.split()[-2:])
                lost = [line for line in stdout.splitlines() if "dropped by kernel" in line]
                info["tcpdump"][peer] = {"cpu_s": user + system, "kernel_drops": int(lost[0].split()[0]) if lost else None}
            info["capture_drops"] = bfifo_drops() - before

        thread = threading.Thread(target=capture)
        thread.start()
        traffic = lab.iperf3(ld._jobs(setup), sample_interval_s=0.25)
        thread.join()
    queue = traffic.qdisc("r", "rx")
    rx = traffic.nstat.get("rx", {})
    info.update(
        drops=queue.drops,
        goodput_bps=traffic.total_goodput_bps,
        recoveries=sum(traffic.nstat.get(f"s{i}", {}).get("TcpExtTCPSackRecovery", 0) for i in range(senders)),
        segments_per_ack=rx.get("TcpInSegs", 0) / max(1, rx.get("TcpOutSegs", 0)),
        cpus_busy=traffic.cpu.busy_s / traffic.wall_s,
        softnet_drops=traffic.softnet_drops,
        readers=[r.to_dict() for r in traffic.readers],
    )
    (out / f"{tag}.json").write_text(json.dumps(info, indent=1, default=str) + "\n")
    return info


def _main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    from fabricsim.validation import linux_dumbbell as ld

    parser = argparse.ArgumentParser(prog="python -m fabricsim.validation.rtt_split")
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture", help="run one unpaced Linux dumbbell with a capture at the router (root)")
    cap.add_argument("cc", choices=["reno", "cubic"])
    cap.add_argument("senders", type=int)
    cap.add_argument("--out", type=Path, default=Path("/dev/shm/rtt-split"))
    cap.add_argument("--tag", default=None)
    lab = sub.add_parser("lab", help="the split of a capture")
    lab.add_argument("tag")
    lab.add_argument("senders", type=int)
    lab.add_argument("--dir", type=Path, default=Path("/dev/shm/rtt-split"))
    tw = sub.add_parser("twin", help="the split of the lab twin of recorded experiments")
    tw.add_argument("--path", type=Path, default=ld.UNPACED_RESULTS)
    tw.add_argument("--only", action="append", default=[])
    tw.add_argument("--seed", type=int, default=1)
    tw.add_argument("--host", choices=list(ld.GRID_DIMENSIONS["host"]), default="ideal", help="the twin's hosts")
    args = parser.parse_args(argv)
    if args.command == "capture":
        tag = args.tag or f"{args.cc}-{args.senders}x1"
        info = capture_run(args.cc, args.senders, args.out, tag)
        print(json.dumps({k: v for k, v in info.items() if k != "readers"}, indent=1))
        print(json.dumps(lab_split(args.out, tag, args.senders), indent=1))
        return 0
    if args.command == "lab":
        print(json.dumps(lab_split(args.dir, args.tag, args.senders), indent=1))
        return 0
    for record in ld.recorded(args.path):
        if args.only and not any(part in record["name"] for part in args.only):
            continue
        s = twin_split(record, seed=args.seed, host=args.host)
        print(
            f"{record['name']}: router {s['router_us']:.0f} us, receiver {s['receiver_us']:.0f} us "
            f"(p50 {s['receiver_p50_us']:.0f}, p90 {s['receiver_p90_us']:.0f}), ACK path {s['ack_path_us']:.0f} us, "
            f"sender reaction p50 {s['sender_reaction_p50_us']:.0f} us; a flow's gaps p50 {s['gap_p50_us']:.1f} us, "
            f"p75 {s['gap_p75_us']:.1f} us, trains of {s['train_segments']:.1f} segments"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
