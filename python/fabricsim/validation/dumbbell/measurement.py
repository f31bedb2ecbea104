"""The Linux side: :func:`measure` runs a setup in network namespaces (root) and returns a
JSON-ready record of its runs and their means."""

from __future__ import annotations

import statistics
from dataclasses import asdict
from typing import Any, Optional

from fabricsim.units import parse_rate, parse_size
from fabricsim.validation.dumbbell.setup import DumbbellSetup, _jobs, _mean_sd, jain_index, topology
from fabricsim.validation.linux import ETH_HEADER, Lab, LabError, Transfer, environment

#: nstat counters kept in the records (sender side).
NSTAT_KEYS = (
    "TcpRetransSegs",
    "TcpOutSegs",
    "TcpExtTCPHystartTrainDetect",
    "TcpExtTCPHystartTrainCwnd",
    "TcpExtTCPHystartDelayDetect",
    "TcpExtTCPHystartDelayCwnd",
    "TcpExtTCPSackRecovery",
    "TcpExtTCPLossProbes",
    "TcpExtTCPLossProbeRecovery",
    "TcpExtTCPFastRetrans",
    "TcpExtTCPSlowStartRetrans",
    "TcpExtTCPLostRetransmit",
    "TcpExtTCPTimeouts",
    "TcpExtTCPSACKReorder",
    "TcpExtTCPDSACKRecv",
    "TcpExtTCPDSACKUndo",
    "TcpExtTCPSpuriousRtxHostQueues",
    "TcpExtTCPFullUndo",
    "TcpExtTCPPartialUndo",
)
#: nstat counters kept in the records (receiver side): how many ACKs the
#: receiver sent for the data segments it took in, and why it sent fewer than
#: one per two segments (segments coalesced in the socket backlog while the
#: application held the socket, SACKs compressed, delayed-ACK timeouts).
NSTAT_RECEIVER_KEYS = (
    "TcpInSegs",
    "TcpOutSegs",
    "TcpExtTCPBacklogCoalesce",
    "TcpExtTCPAckCompressed",
    "TcpExtDelayedACKs",
    "TcpExtTCPRcvCoalesce",
)

def payload_rate_bps(setup: DumbbellSetup) -> float:
    """The most TCP payload the bottleneck carries: its rate times MSS / (IP packet + Ethernet header)."""
    return parse_rate(setup.rate) * (setup.mtu - 52) / (setup.mtu + ETH_HEADER)


def measure(
    setup: DumbbellSetup,
    repeats: int = 3,
    latency_s: float = 3.0,
    max_attempts: Optional[int] = None,
    starved_share: float = 0.97,
    pause_s: float = 20.0,
    nice: int = 0,
    awake_latency: bool = False,
) -> dict[str, Any]:
    """Run ``setup`` in real Linux ``repeats`` times (root); a JSON-ready record.

    Each repeat builds a fresh lab (fresh TCP metrics, fresh qdisc counters).
    A run whose total goodput stays below ``starved_share`` of the
    bottleneck's payload rate, or that lost packets in a CPU's input backlog
    (softnet drops), was limited by the CPU rather than by the bottleneck
    (the machine is shared): it is set aside (kept under ``starved_runs``)
    and run again after ``pause_s``, up to ``max_attempts`` runs in all
    (default ``3 * repeats``). ``nice`` is the niceness of the traffic
    processes (:class:`Lab`). ``awake_latency`` probes the one-way latency
    with every CPU kept awake (:meth:`Lab.sockperf_pingpong`).
    """
    import time

    runs: list[dict[str, Any]] = []
    starved: list[dict[str, Any]] = []
    env: dict[str, Any] = {}
    for attempt in range(max_attempts or 3 * repeats):
        if len(runs) == repeats:
            break
        if starved and starved[-1]["attempt"] == attempt - 1:
            time.sleep(pause_s)
        with Lab(topology(setup), nice=nice) as lab:
            if not env:
                env = environment(lab, "s0")
            run = _one_run(setup, lab, latency_s, awake_latency)
        run["attempt"] = attempt
        run["nice"] = nice
        if run["total_goodput_bps"] < starved_share * payload_rate_bps(setup) or run["softnet_drops"] > 0:
            starved.append(run)
        else:
            run["repeat"] = len(runs)
            runs.append(run)
    if not runs:
        raise LabError(f"{setup.name}: every run was limited by the CPU (the machine is busy); try again later")
    one_way = [_p50(r["one_way_latency_us"]) for r in runs]
    flows = setup.flows
    per_flow = [[run["flows"][i]["goodput_bps"] for run in runs] for i in range(flows)]
    summary = {
        "total_goodput_bps": _mean_sd([r["total_goodput_bps"] for r in runs]),
        "flow_goodput_bps": [_mean_sd(values) for values in per_flow],
        "jain_index": _mean_sd([jain_index([f["goodput_bps"] for f in r["flows"]]) for r in runs]),
        "drops": _mean_sd([r["bottleneck"]["drops"] for r in runs]),
        "retransmits": _mean_sd([r["retransmits"] for r in runs]),
        "one_way_latency_us": _mean_sd(one_way),
        "mean_queue_bytes": _mean_sd(
            [statistics.fmean(r["bottleneck"]["backlog_samples_bytes"]) for r in runs if r["bottleneck"]["backlog_samples_bytes"]]
        ),
    }
    if setup.size:
        summary["job_completion_s"] = _mean_sd([r["job_completion_s"] for r in runs])
    return {
        "name": setup.name,
        "setup": asdict(setup),
        "environment": env,
        "summary": summary,
        "runs": runs,
        "starved_runs": starved,
    }


def _p50(latency: dict[str, Any]) -> float:
    """The median one-way latency of a probe (its mean where sockperf gave no percentiles)."""
    return latency["percentiles_us"].get("p50", latency["avg_us"])


def reprobe_latency(record: dict[str, Any], latency_s: float = 1.0, nice: int = 0) -> dict[str, Any]:
    """``record`` with its one-way latency probed again on a fresh lab of its
    setup with every CPU kept awake, once per run: each run's earlier probe
    moves to ``one_way_latency_idle_us``, the summary's latency becomes the
    new probes' (root). A recording made on otherwise idle CPUs has probes
    that include the CPUs' wake-ups, which its transfers do not pay."""
    from datetime import datetime, timezone

    setup = DumbbellSetup(**record["setup"])
    for run in record["runs"]:
        with Lab(topology(setup), nice=nice) as lab:
            probe = lab.sockperf_pingpong("s0", "rx", message_bytes=64, duration_s=latency_s, awake=True)
        if run.get("latency_probe") != "awake":
            run["one_way_latency_idle_us"] = run["one_way_latency_us"]
        run["one_way_latency_us"] = asdict(probe)
        run["latency_probe"] = "awake"
        run["latency_probed_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    record["summary"]["one_way_latency_us"] = _mean_sd([_p50(r["one_way_latency_us"]) for r in record["runs"]])
    return record


def _one_run(setup: DumbbellSetup, lab: Lab, latency_s: float, awake: bool = False) -> dict[str, Any]:
    latency = lab.sockperf_pingpong("s0", "rx", message_bytes=64, duration_s=latency_s, awake=awake)
    if setup.size:
        size = parse_size(setup.size)
        transfers = [
            Transfer(src=f"s{i}", dst="rx", bytes=size, cc=setup.cc)
            for i in range(setup.senders)
            for _ in range(setup.flows_per_sender)
        ]
        run = lab.transfers(transfers, sample_interval_s=0.25)
    else:
        run = lab.iperf3(_jobs(setup), sample_interval_s=0.25, socket_nodes=("rx",))
    queue = run.qdisc("r", "rx")
    shaper = run.qdisc("r", "rx", leaf=False)
    senders = [f"s{i}" for i in range(setup.senders)]
    nstat = {key: sum(run.nstat.get(s, {}).get(key, 0) for s in senders) for key in NSTAT_KEYS}
    return {
        "one_way_latency_us": asdict(latency),
        "latency_probe": "awake" if awake else "idle",
        "flows": [
            {
                "src": f.src,
                "stream": f.stream,
                "goodput_bps": f.goodput_bps,
                "bytes_received": f.bytes_received,
                "seconds": f.seconds,
                "retransmits": f.retransmits,
                "min_rtt_us": f.min_rtt_us,
                "mean_rtt_us": f.mean_rtt_us,
                "max_cwnd_bytes": f.max_cwnd_bytes,
                "completion_s": f.completion_s,
                "first_retransmit_s": next((i[0] for i in f.intervals if i[3] > 0), None),
                "client_start_s": run.client_starts_s[f.job] if f.job < len(run.client_starts_s) else None,
            }
            for f in run.flows
        ],
        "total_goodput_bps": run.total_goodput_bps,
        "retransmits": run.total_retransmits,
        "job_completion_s": run.job_completion_s,
        "bottleneck": {
            "drops": queue.drops,
            "packets": queue.packets,
            "bytes": queue.bytes,
            "shaper_overlimits": shaper.overlimits,
            "backlog_samples_bytes": [s[3] for s in run.qdisc_samples if s[1] == "r"],
        },
        "nstat_senders": nstat,
        "nstat_receiver": {key: run.nstat.get("rx", {}).get(key, 0) for key in NSTAT_RECEIVER_KEYS},
        "readers": [r.to_dict() for r in run.readers],
        "receiver_sockets": receiver_sockets(run.socket_samples),
        "writers": [w.to_dict() for w in run.writers],
        "softnet_drops": run.softnet_drops,
        "cpu_busy_s": run.cpu.busy_s,
        "iperf3_cpu_s": run.iperf3_cpu_s,
        "wall_s": run.wall_s,
        "load_before": run.load_before,
        "load_after": run.load_after,
    }


def receiver_sockets(samples: list[tuple[float, str, Any]]) -> list[dict[str, Any]]:
    """Per data connection at the receiver (iperf3's control connections carry
    almost nothing and are left out), from the polled ``ss -tmin``: the receive
    buffer's growth (``rcvbuf_steps``: (seconds, bytes) at each change seen),
    its largest value, the largest ``rcv_space`` and ``rcv_ssthresh``, and the
    mean truesize per queued byte (``rmem_alloc / recv_q`` where data was queued)."""
    by_conn: dict[str, list[tuple[float, Any]]] = {}
    for t, _node, sock in samples:
        by_conn.setdefault(f"{sock.local} {sock.peer}", []).append((t, sock))
    out = []
    for conn, seen in sorted(by_conn.items()):
        if max(s.bytes_received for _, s in seen) < 1_000_000:
            continue
        steps: list[tuple[float, int]] = []
        for t, s in seen:
            if not steps or s.rcvbuf != steps[-1][1]:
                steps.append((round(t, 3), s.rcvbuf))
        queued = [(s.rmem_alloc, s.recv_q) for _, s in seen if s.recv_q > 0]
        out.append(
            {
                "connection": conn,
                "rcvbuf_steps": steps,
                "rcvbuf_max_bytes": max(s.rcvbuf for _, s in seen),
                "rcvbuf_grows": sum(1 for a, b in zip(steps, steps[1:]) if b[1] > a[1]),
                "rcv_space_max_bytes": max(s.rcv_space for _, s in seen),
                "rcv_ssthresh_max_bytes": max(s.rcv_ssthresh for _, s in seen),
                "truesize_per_byte": (sum(r for r, _ in queued) / sum(q for _, q in queued)) if queued else None,
            }
        )
    return out
