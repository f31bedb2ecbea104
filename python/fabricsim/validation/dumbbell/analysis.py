"""Analyses of recorded experiments against their twins: the kernel's counters
(recoveries, drops, the receiver's cadence), the twin's same numbers, and the twin
over a grid of models (:func:`twin_grid`)."""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any, Optional, Sequence

from fabricsim.units import parse_rate
from fabricsim.validation.dumbbell.setup import DumbbellSetup
from fabricsim.validation.dumbbell.twin import (
    LAB_ROUTER_FORWARDING,
    lab_host_model,
    lab_twin,
    measured_receiver_app,
    scenario,
    simulate_recorded,
)

#: The dimensions of :func:`twin_grid`: name -> {value name: what it sets}.
GRID_DIMENSIONS: dict[str, dict[str, Any]] = {
    "pacing": {"off": "off", "internal": "internal"},
    # The lab machine as measured, with TCP's 64 KiB GSO bursts (the lab's senders
    # built them), those with received packets spread over the cores by flow hash
    # (as the lab's RPS did) instead of on the application's core, and without any
    # CPU cost (what the machine's structure does alone).
    "host": {
        "ideal": None,
        "lab-machine": {},
        "lab-machine-gso64k": {"gso": "64KiB"},
        "lab-machine-gso64k-rss": {"gso": "64KiB", "rx_steering": "rss"},
        "lab-machine-no-cost": {"stages": []},
    },
    "router": {"switch": None, "forwarding": LAB_ROUTER_FORWARDING, "on-machine": "on-machine"},
    # On a modelled host the measured reader runs on its host's core; "measured-timers"
    # keeps it on its own timers there (tcp.receiver_app.on_core: false).
    "reader": {"ideal": False, "measured": True, "measured-timers": "timers"},
}


def _grid_run(job: tuple[dict[str, Any], dict[str, str], int]) -> dict[str, Any]:
    record, point, seed = job
    setup = DumbbellSetup(**record["setup"])
    tcp = {"pacing": GRID_DIMENSIONS["pacing"][point["pacing"]]}
    router = GRID_DIMENSIONS["router"][point["router"]]
    on_machine = router == "on-machine"
    machine = GRID_DIMENSIONS["host"][point["host"]]
    host = lab_host_model(setup, forwarding=on_machine, **machine) if machine is not None else None
    reader = GRID_DIMENSIONS["reader"][point["reader"]]
    if reader == "timers":
        app = measured_receiver_app(record)
        tcp["receiver_app"] = {**app, "on_core": False} if app is not None else None
        reader = True
    sim = simulate_recorded(record, seed, tcp=tcp, host=host, router=None if on_machine else router, reader=reader)
    keys = ("drops", "recoveries", "total_goodput_bps", "retransmits", "timeouts", "conservation_ok")
    return {"experiment": record["name"], **point, "seed": seed, **{k: sim[k] for k in keys}}


def twin_grid(
    experiments: Sequence[dict[str, Any]],
    seeds: Sequence[int] = (1, 2, 3),
    workers: int = 1,
    only: Optional[dict[str, Sequence[str]]] = None,
) -> list[dict[str, Any]]:
    """The twins of recorded experiments over :data:`GRID_DIMENSIONS` (or the
    values ``only`` keeps per dimension): one row per experiment, grid point
    and seed (drops, recoveries, goodput, ...), run on ``workers`` processes."""
    import itertools
    from concurrent.futures import ProcessPoolExecutor

    names = list(GRID_DIMENSIONS)
    values = [list((only or {}).get(n) or GRID_DIMENSIONS[n]) for n in names]
    points = [dict(zip(names, combo)) for combo in itertools.product(*values)]
    # The router's forwarding on the machine's cores needs the machine.
    points = [p for p in points if p["router"] != "on-machine" or GRID_DIMENSIONS["host"][p["host"]] is not None]
    # Without a host model the reader is on its timers anyway.
    points = [p for p in points if p["reader"] != "measured-timers" or GRID_DIMENSIONS["host"][p["host"]] is not None]
    jobs = [(record, point, seed) for record in experiments for point in points for seed in seeds]
    if workers <= 1:
        return [_grid_run(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_grid_run, jobs, chunksize=4))

def kernel_recoveries(record: dict[str, Any]) -> float:
    """The kernel's SACK recoveries (loss episodes) per kept run of a recorded experiment."""
    return statistics.fmean(r["nstat_senders"].get("TcpExtTCPSackRecovery", 0) for r in record["runs"])


def cpu_busy_shares(record: dict[str, Any]) -> list[float]:
    """Per kept run of a recorded experiment, the share of the machine's CPU time that was
    busy (whatever ran on it: the lab's processes and any other work); empty where not recorded."""
    cpus = record["environment"].get("cpus") or 0
    return [run["cpu_busy_s"] / run["wall_s"] / cpus for run in record.get("runs", [])
            if cpus and run.get("cpu_busy_s") is not None and run.get("wall_s")]


def _bfifo_mean_bytes(run: dict[str, Any]) -> float:
    """Mean of a run's bfifo backlog samples, without the zeros sampled after the traffic ended."""
    samples = list(run["bottleneck"]["backlog_samples_bytes"])
    while samples and samples[-1] == 0:
        samples.pop()
    return statistics.fmean(samples) if samples else 0.0


def kernel_cadence(record: dict[str, Any]) -> dict[str, float]:
    """How the kernel's receiver acknowledged and read, per kept run (means):
    data segments per ACK (``TcpInSegs / TcpOutSegs`` of the receiver's
    namespace), ACKs, segments coalesced in the socket backlog
    (``TcpExtTCPBacklogCoalesce``), compressed SACKs
    (``TcpExtTCPAckCompressed``), the servers' ``read()`` calls that returned
    data (scheduler trace; ``syscalls`` where untraced) and bytes per such
    read, drops per SACK recovery, the bfifo's mean backlog (``tc`` samples
    every 0.25 s), the senders' mean smoothed RTT (iperf3's ``mean_rtt``)
    and the part of it not spent in the bfifo (RTT less backlog / rate)."""
    runs = record["runs"]
    rate = parse_rate(DumbbellSetup(**record["setup"]).rate) / 8

    def mean(f: Any) -> float:
        return statistics.fmean(f(r) for r in runs)

    def reads(run: dict[str, Any]) -> float:
        return float(sum((r.get("sched") or {}).get("data_reads") or r["syscalls"] for r in run.get("readers", [])))

    rtt = mean(lambda r: statistics.fmean(f["mean_rtt_us"] for f in r["flows"]) / 1e6)
    bfifo = mean(_bfifo_mean_bytes)
    return {
        "segments_per_ack": mean(lambda r: r["nstat_receiver"]["TcpInSegs"] / max(1, r["nstat_receiver"]["TcpOutSegs"])),
        "acks": mean(lambda r: r["nstat_receiver"]["TcpOutSegs"]),
        "backlog_coalesced": mean(lambda r: r["nstat_receiver"].get("TcpExtTCPBacklogCoalesce", 0)),
        "acks_compressed": mean(lambda r: r["nstat_receiver"].get("TcpExtTCPAckCompressed", 0)),
        "reads": mean(reads),
        "bytes_per_read": mean(lambda r: sum(x["bytes"] for x in r.get("readers", [])) / max(1.0, reads(r))),
        "drops_per_recovery": summary_drops(record) / max(1.0, kernel_recoveries(record)),
        "bfifo_bytes": bfifo,
        "rtt_s": rtt,
        "outside_bfifo_s": rtt - bfifo / rate,
    }


def twin_scenario(
    record: dict[str, Any],
    seed: int = 1,
    tcp: Optional[dict[str, Any]] = None,
    host: str = "ideal",
    duration_s: Optional[float] = None,
) -> tuple[DumbbellSetup, dict[str, Any]]:
    """The setup and scenario of the lab twin of ``record`` (:func:`lab_twin`,
    ``tcp`` overriding its fields), its hosts per ``host`` (a value of
    :data:`GRID_DIMENSIONS`' host dimension, e.g. ``lab-machine-gso64k``: on
    the lab machine, the receiving application on its core), run for
    ``duration_s`` if given; for analyses that add their own ``stats``."""
    setup = DumbbellSetup(**record["setup"])
    if duration_s is not None:
        setup = replace(setup, duration_s=duration_s)
    twin_tcp, _ = lab_twin(record)
    machine = GRID_DIMENSIONS["host"][host]
    host_cfg = lab_host_model(setup, **machine) if machine is not None else None
    latency = record["summary"]["one_way_latency_us"]["mean"]
    return setup, scenario(setup, latency, seed, tcp={**twin_tcp, **(tcp or {})}, host=host_cfg)


def twin_cadence(
    record: dict[str, Any], seed: int = 1, tcp: Optional[dict[str, Any]] = None, host: str = "ideal"
) -> dict[str, float]:
    """:func:`kernel_cadence`'s numbers for the lab twin of ``record``
    (:func:`lab_twin`, ``tcp`` overriding its fields; ``host``: a value of
    :data:`GRID_DIMENSIONS`' host dimension): from its ``tcp_receivers``
    table (ACKs, backlog coalescing, compressed SACKs, reads), its flows
    (drops per recovery), the bottleneck's mean queue and the senders' SRTT
    (``tcp_trace`` every 1 ms after the first 2 s)."""
    from fabricsim.runner import run
    from fabricsim.schema import from_dict

    setup, sc = twin_scenario(record, seed, tcp, host)
    sc["stats"]["tcp_trace"] = {"interval": "1ms"}
    result = run(from_dict(sc), seed=seed)
    rx = result.tables()["tcp_receivers"]
    total = lambda col: float(rx[col].sum())  # noqa: E731
    trace = result.tables()["tcp_trace"]
    acks_seen = trace.filter((trace["event"] == "ack") & (trace["time_ps"] > 2 * 10**12))
    rtt = float(acks_seen["srtt_ps"].mean()) / 1e12
    link = result.links.filter((result.links["src"] == "r") & (result.links["dst"] == "rx"))
    queue_s = float(link["queue_delay_mean_ps"][0]) / 1e12
    drops = float(result.drops["packets"].sum()) if result.drops.height else 0.0
    recoveries = float(result.flows["fast_retransmits"].sum())
    return {
        "segments_per_ack": total("data_segments") / max(1.0, total("acks_sent")),
        "acks": total("acks_sent"),
        "backlog_coalesced": total("backlog_coalesced"),
        "acks_compressed": total("acks_compressed"),
        "reads": total("reads"),
        "bytes_per_read": total("bytes_read") / max(1.0, total("reads")),
        "drops_per_recovery": drops / max(1.0, recoveries),
        "bfifo_bytes": queue_s * parse_rate(setup.rate) / 8,
        "rtt_s": rtt,
        "outside_bfifo_s": rtt - queue_s,
    }

def summary_drops(record: dict[str, Any]) -> float:
    """Mean bottleneck drops of a recorded experiment."""
    return float(record["summary"]["drops"]["mean"])


def segments_per_ack(runs: Sequence[dict[str, Any]]) -> str:
    """Data segments the receiver took in per segment (ACK) it sent, over the
    runs that recorded the receiver's counters ("-" if none did)."""
    counted = [r["nstat_receiver"] for r in runs if r.get("nstat_receiver", {}).get("TcpOutSegs")]
    if not counted:
        return "-"
    return f"{sum(c['TcpInSegs'] for c in counted) / sum(c['TcpOutSegs'] for c in counted):.1f}"
