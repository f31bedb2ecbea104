"""Tables of recorded experiments and their twins: Markdown for docs/validation/linux.md
(:func:`markdown`, :func:`reader_markdown`, :func:`reader_runs_markdown`,
:func:`twin_markdown`, :func:`cadence_markdown`, :func:`grid_markdown`) and the rows
that ``fabricsim validate linux`` prints (:func:`compare`)."""

from __future__ import annotations

import math
import statistics
from typing import Any, Optional, Sequence

from fabricsim.validation.dumbbell.analysis import (
    GRID_DIMENSIONS,
    kernel_cadence,
    kernel_recoveries,
    segments_per_ack,
    summary_drops,
    twin_cadence,
)
from fabricsim.validation.dumbbell.setup import DumbbellSetup, _mean_sd
from fabricsim.validation.dumbbell.twin import (
    lab_twin,
    measured_receiver_app,
    reader_measurements,
    recorded_pacing,
    recorded_tcp,
    simulate,
    simulate_recorded,
    traced_loop_time_ns,
    traced_preemption,
    traced_wakeups_ns,
)

def reader_markdown(experiments: Sequence[dict[str, Any]], seeds: Sequence[int] = (1, 2, 3)) -> str:
    """Linux against the twin with the ideal reader and with the reader measured in the lab."""
    lines = [
        "| experiment | reader (measured) | | drops | recoveries | drops / recovery | data segments / ACK | goodput (Mbps) | bytes / wake-up |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for record in experiments:
        m = reader_measurements(record)
        app = measured_receiver_app(record)
        if m is None or app is None:
            continue
        setup = DumbbellSetup(**record["setup"])
        latency = record["summary"]["one_way_latency_us"]["mean"]
        runs = record["runs"]
        linux_rec = kernel_recoveries(record)
        linux_drops = summary_drops(record)
        linux_goodput = record["summary"]["total_goodput_bps"]["mean"]
        rx = [r.get("nstat_receiver", {}) for r in runs]
        linux_spa = sum(r.get("TcpInSegs", 0) for r in rx) / max(1, sum(r.get("TcpOutSegs", 0) for r in rx))
        desc = (
            f"{m['reads_per_s']:.0f} reads/s, {m['bytes_per_read'] / 1e3:.1f} KB/read, "
            f"wake-up {m['delay_per_wakeup_s'] * 1e6:.0f} us, {8 / m['cpu_per_byte_s'] / 1e9:.2f} Gb/s"
        )
        traced_ns = traced_wakeups_ns(record)
        if traced_ns:
            q = sorted(traced_ns)
            at = lambda f: q[min(len(q) - 1, int(f * len(q)))] / 1e3  # noqa: E731
            desc += (
                f"; traced wake-up mean {statistics.fmean(q) / 1e3:.0f} us, "
                f"p50 {at(0.5):.0f}, p90 {at(0.9):.0f}, p99 {at(0.99):.0f} us"
            )
            preemption = traced_preemption(record)
            if preemption:
                desc += f", preempted after {100 * preemption['probability']:.1f} % of reads"
            loop_ns = traced_loop_time_ns(record)
            if loop_ns:
                desc += f", loop tail {loop_ns / 1e3:.1f} us"
        lines.append(
            f"| {record['name']} | {desc} | Linux | {linux_drops:.0f} | {linux_rec:.0f} "
            f"| {linux_drops / linux_rec if linux_rec else float('nan'):.1f} | {linux_spa:.1f} "
            f"| {record['summary']['total_goodput_bps']['mean'] / 1e6:.1f} | {m['bytes_per_wakeup'] / 1e3:.1f} KB |"
        )
        variants: list[tuple[str, Optional[dict[str, Any]]]] = [
            ("twin, ideal reader", None),
            ("twin, measured reader", {"receiver_app": app}),
        ]
        if setup.cc == "cubic":
            variants.append(("twin, measured reader, CUBIC in exact time (`cubic_hz: 0`)", {"receiver_app": app, "cubic_hz": 0}))
            variants.append(
                (
                    "twin, measured reader, CUBIC holding min(HZ / 32, delay_min) (`cubic_hold_hz32: false`)",
                    {"receiver_app": app, "cubic_hold_hz32": False},
                )
            )
        if recorded_pacing(record.get("environment") or {}):
            variants.append(("twin, measured reader, unpaced (`pacing: off`)", {"receiver_app": app, "pacing": "off"}))
        if traced_wakeups_ns(record):
            traced = measured_receiver_app(record, traced=True)
            looped = measured_receiver_app(record, traced=True, loop=True)
            variants.append(("twin, traced wake-ups and preemptions", {"receiver_app": traced}))
            variants.append(("twin, traced, with the loop's tail", {"receiver_app": looped}))
        for label, tcp in variants:
            sims = [simulate(setup, latency, seed=seed, tcp=recorded_tcp(record, tcp)) for seed in seeds]
            mean = lambda key: statistics.fmean(x[key] for x in sims)  # noqa: E731
            drops, rec = mean("drops"), mean("recoveries")
            per_wake = mean("bytes_per_wakeup") / 1e3 if tcp else float("nan")
            lines.append(
                f"| | | {label} | {drops:.0f} ({drops / linux_drops:.2f}) | {rec:.0f} | "
                f"{drops / rec if rec else float('nan'):.1f} | {mean('segments_per_ack'):.1f} "
                f"| {mean('total_goodput_bps') / 1e6:.1f} ({mean('total_goodput_bps') / linux_goodput:.3f}) "
                f"| {'-' if not tcp else f'{per_wake:.1f} KB'} |"
            )
    return "\n".join(lines)


def reader_runs_markdown(experiments: Sequence[dict[str, Any]], seed: int = 1) -> str:
    """Run by run: each kept Linux run against the twin with that run's own measured reader
    (and, where the run was traced, with its traced wake-ups and preemptions)."""
    lines = [
        "| run | wake-up (us) | copy (Gb/s) | Linux drops | twin drops | ratio | Linux drops / recovery | twin | Linux segments / ACK | twin | twin drops, traced wake-ups (ratio) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for record in experiments:
        setup = DumbbellSetup(**record["setup"])
        latency = record["summary"]["one_way_latency_us"]["mean"]
        for run in record["runs"]:
            m = reader_measurements(record, [run])
            app = measured_receiver_app(record, [run])
            if m is None or app is None:
                continue
            sim = simulate(setup, latency, seed=seed, tcp=recorded_tcp(record, {"receiver_app": app}))
            drops = run["bottleneck"]["drops"]
            traced = "-"
            if traced_wakeups_ns(record, [run]):
                traced_app = measured_receiver_app(record, [run], traced=True)
                other = simulate(setup, latency, seed=seed, tcp=recorded_tcp(record, {"receiver_app": traced_app}))
                traced = f"{other['drops']} ({other['drops'] / drops:.2f})"
            rec = run["nstat_senders"].get("TcpExtTCPSackRecovery", 0)
            rx = run.get("nstat_receiver", {})
            spa = rx.get("TcpInSegs", 0) / max(1, rx.get("TcpOutSegs", 0))
            lines.append(
                f"| {record['name']} #{run.get('repeat', 0)} | {m['delay_per_wakeup_s'] * 1e6:.0f} "
                f"| {8 / m['cpu_per_byte_s'] / 1e9:.2f} | {drops} | {sim['drops']} | {sim['drops'] / drops:.2f} "
                f"| {drops / rec if rec else float('nan'):.1f} "
                f"| {sim['drops'] / sim['recoveries'] if sim['recoveries'] else float('nan'):.1f} "
                f"| {spa:.1f} | {sim['segments_per_ack']:.1f} | {traced} |"
            )
    return "\n".join(lines)

def grid_markdown(experiments: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> str:
    """The twin grid as ratios to the kernel's means (seed means): drops,
    SACK recoveries and total goodput, one line per experiment and grid point."""
    kernel = {
        e["name"]: (summary_drops(e), kernel_recoveries(e), e["summary"]["total_goodput_bps"]["mean"]) for e in experiments
    }
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    names = list(GRID_DIMENSIONS)
    for row in rows:
        groups.setdefault((row["experiment"], *(row[n] for n in names)), []).append(row)
    lines = [
        "| experiment | " + " | ".join(names) + " | drops (ratio) | recoveries (ratio) | goodput ratio |",
        "|---|" + "---|" * len(names) + "---:|---:|---:|",
    ]
    for key, group in groups.items():
        drops, rec, goodput = kernel[key[0]]
        mean = lambda k: statistics.fmean(r[k] for r in group)  # noqa: E731
        lines.append(
            f"| {' | '.join(key)} | {mean('drops'):.0f} ({mean('drops') / drops:.2f}) "
            f"| {mean('recoveries'):.0f} ({mean('recoveries') / rec if rec else float('nan'):.2f}) "
            f"| {mean('total_goodput_bps') / goodput:.3f} |"
        )
    return "\n".join(lines)


def twin_markdown(experiments: Sequence[dict[str, Any]], seeds: Sequence[int] = (1, 2, 3)) -> str:
    """Linux against the lab twin (:func:`simulate_recorded`, its defaults) over
    ``seeds``: the lab's CPU headroom (system CPUs busy, CPU-backlog drops),
    then goodput, drops, SACK recoveries and retransmits, the twin's seed mean
    with its ratio to the kernel's mean."""
    lines = [
        "| experiment | twin | runs kept / set aside | CPUs busy (of 2) | softnet drops | goodput (Mbps) "
        "| drops | recoveries | retransmits |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for record in experiments:
        runs = record["runs"]
        summary = record["summary"]
        tcp, _ = lab_twin(record)
        twin = ", ".join(
            ["paced" if tcp.get("pacing") else "unpaced"] + (["measured reader"] if "receiver_app" in tcp else [])
        )
        sims = [simulate_recorded(record, seed=seed) for seed in seeds]
        mean = lambda key: statistics.fmean(float(x[key]) for x in sims)  # noqa: E731
        linux = {
            "total_goodput_bps": summary["total_goodput_bps"]["mean"],
            "drops": summary_drops(record),
            "recoveries": kernel_recoveries(record),
            "retransmits": summary["retransmits"]["mean"],
        }
        busy = statistics.fmean(r["cpu_busy_s"] / r["wall_s"] for r in runs)
        cells = [
            f"| {record['name']} | Linux | {len(runs)} / {len(record.get('starved_runs', []))} | {busy:.2f} "
            f"| {sum(r['softnet_drops'] for r in runs)} | {linux['total_goodput_bps'] / 1e6:.1f} "
            f"| {summary['drops']['mean']:.0f} ± {summary['drops']['sd']:.0f} | {linux['recoveries']:.0f} "
            f"| {summary['retransmits']['mean']:.0f} ± {summary['retransmits']['sd']:.0f} |",
            f"| | {twin}, seeds {seeds[0]}-{seeds[-1]} | | | "
            + " | ".join(
                f"{mean(key) / scale:.{digits}f} ({mean(key) / linux[key] if linux[key] else float('nan'):.{ratio}f})"
                for key, scale, digits, ratio in (
                    ("total_goodput_bps", 1e6, 1, 3),
                    ("drops", 1.0, 0, 2),
                    ("recoveries", 1.0, 0, 2),
                    ("retransmits", 1.0, 0, 2),
                )
            )
            + " |",
        ]
        lines += cells
    return "\n".join(lines)

def cadence_markdown(experiments: Sequence[dict[str, Any]], seed: int = 1, host: str = "ideal") -> str:
    """The kernel's receiver against the twin's (:func:`kernel_cadence`, :func:`twin_cadence`)."""
    lines = [
        "| experiment | | data segments / ACK | ACKs | backlog coalesced | ACKs compressed | reads "
        "| KB / read | drops / recovery | bfifo mean (KB) | RTT (ms) | RTT outside the bfifo (ms) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for record in experiments:
        twin = twin_cadence(record, seed, host=host)
        for label, c in (("Linux", kernel_cadence(record)), (f"twin, seed {seed}", twin)):
            lines.append(
                f"| {record['name'] if label == 'Linux' else ''} | {label} | {c['segments_per_ack']:.1f} | {c['acks']:,.0f} "
                f"| {c['backlog_coalesced']:,.0f} | {c['acks_compressed']:,.0f} | {c['reads']:,.0f} "
                f"| {c['bytes_per_read'] / 1e3:.1f} | {c['drops_per_recovery']:.1f} | {c['bfifo_bytes'] / 1e3:.0f} "
                f"| {c['rtt_s'] * 1e3:.2f} | {c['outside_bfifo_s'] * 1e3:.2f} |"
            )
    return "\n".join(lines)


def compare(
    record: dict[str, Any],
    seed: int = 1,
    shaped_router: bool = False,
    host: Optional[dict[str, Any]] = None,
    tcp: Optional[dict[str, Any]] = None,
    reader: Optional[bool] = None,
    machine: bool = False,
) -> list[tuple[str, str, str, str]]:
    """Rows (metric, Linux mean ± sd, fabricsim, fabricsim / Linux) for one recorded experiment
    (``shaped_router``, ``host``, ``tcp``: see :func:`scenario`); the twin is the lab as it ran
    (:func:`lab_twin`: pacing, and the measured reader where recorded; ``reader``, ``machine``:
    see there), ``tcp`` and ``host`` override it."""
    summary = record["summary"]
    sim = simulate_recorded(record, seed, tcp=tcp, host=host, shaped_router=shaped_router, reader=reader, machine=machine)
    rows: list[tuple[str, str, str, str]] = []

    def add(metric: str, linux: dict[str, float], value: Optional[float], scale: float, unit: str) -> None:
        if value is None or linux["n"] == 0:
            rows.append((metric, _fmt(linux, scale, unit), "-" if value is None else f"{value / scale:.4g}", "-"))
            return
        ratio = value / linux["mean"] if linux["mean"] else float("nan")
        rows.append((metric, _fmt(linux, scale, unit), f"{value / scale:.4g} {unit}".strip(), _ratio(ratio)))

    for index, flow in enumerate(sim["flows"]):
        if index < len(summary["flow_goodput_bps"]):
            add(f"goodput flow {index} ({flow['src']})", summary["flow_goodput_bps"][index], flow["goodput_bps"], 1e6, "Mbps")
    add("goodput total", summary["total_goodput_bps"], sim["total_goodput_bps"], 1e6, "Mbps")
    add("Jain fairness index", summary["jain_index"], sim["jain_index"], 1.0, "")
    add("drops at the bottleneck", summary["drops"], sim["drops"], 1.0, "pkts")
    queue = summary.get("mean_queue_bytes") or _mean_sd(
        [statistics.fmean(r["bottleneck"]["backlog_samples_bytes"]) for r in record["runs"] if r["bottleneck"]["backlog_samples_bytes"]]
    )
    add("mean bottleneck queue", queue, sim["mean_queue_bytes"], 1e3, "KB")
    add("retransmits", summary["retransmits"], sim["retransmits"], 1.0, "pkts")
    # Loss episodes: the senders' SACK recoveries (nstat) against the twin's entries into recovery.
    recoveries = [r["nstat_senders"].get("TcpExtTCPSackRecovery", 0) for r in record["runs"]]
    add("loss episodes (recoveries)", _mean_sd(recoveries), sim["recoveries"], 1.0, "")
    receivers = [r["nstat_receiver"] for r in record["runs"] if r.get("nstat_receiver", {}).get("TcpOutSegs")]
    per_ack = [r.get("TcpInSegs", 0) / r["TcpOutSegs"] for r in receivers]
    add("data segments per ACK", _mean_sd(per_ack), sim["segments_per_ack"], 1.0, "")
    if "job_completion_s" in summary:
        add("job completion time", summary["job_completion_s"], sim["job_completion_s"], 1.0, "s")
    return rows


def _fmt(stat: dict[str, float], scale: float, unit: str) -> str:
    if not stat["n"] or stat["mean"] is None or (isinstance(stat["mean"], float) and math.isnan(stat["mean"])):
        return "-"
    text = f"{stat['mean'] / scale:.4g}"
    if stat["n"] > 1:
        text += f" ± {stat['sd'] / scale:.2g}"
    return f"{text} {unit}".strip()


def _ratio(value: float) -> str:
    return "-" if math.isnan(value) or math.isinf(value) else f"{value:.2f}"

def markdown(experiments: Sequence[dict[str, Any]], with_simulation: bool = True) -> str:
    """Tables of recorded experiments (and their fabricsim twins), for docs/validation/linux.md."""
    lines = [
        "| experiment | goodput total (Mbps) | per flow (Mbps) | Jain | drops | retransmits | JCT (s) | load | runs kept / set aside |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for record in experiments:
        summary = record["summary"]
        flows = ", ".join(f"{f['mean'] / 1e6:.0f}" for f in summary["flow_goodput_bps"])
        jct = _fmt(summary["job_completion_s"], 1.0, "") if "job_completion_s" in summary else "-"
        load = statistics.fmean(r["load_before"][0] for r in record["runs"])
        lines.append(
            f"| {record['name']} | {_fmt(summary['total_goodput_bps'], 1e6, '')} | {flows} "
            f"| {summary['jain_index']['mean']:.3f} | {_fmt(summary['drops'], 1.0, '')} "
            f"| {_fmt(summary['retransmits'], 1.0, '')} | {jct} | {load:.2f} "
            f"| {len(record['runs'])} / {len(record.get('starved_runs', []))} |"
        )
    lines += [
        "",
        "Sender-side kernel counters (nstat, mean per run), drops per SACK recovery, the first interval (0.1 s) "
        "with a retransmission, and the receiver's data segments per ACK (runs that recorded the receiver's counters):",
        "",
        "| experiment | Hystart train / delay exits | cwnd at exit | SACK recoveries | drops / recovery | loss probes "
        "| RTOs | reorder seen | softnet drops | first retransmit (s) | data segments / ACK (receiver) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for record in experiments:
        runs = record["runs"]

        def mean(key: str) -> float:
            return statistics.fmean(r["nstat_senders"].get(key, 0) for r in runs)

        exits = mean("TcpExtTCPHystartTrainDetect") + mean("TcpExtTCPHystartDelayDetect")
        cwnd = (mean("TcpExtTCPHystartTrainCwnd") + mean("TcpExtTCPHystartDelayCwnd")) / exits if exits else 0.0
        firsts = [f["first_retransmit_s"] for r in runs for f in r["flows"] if f["first_retransmit_s"] is not None]
        first = f"{min(firsts):.1f}-{max(firsts):.1f}" if firsts else "none"
        recoveries = mean("TcpExtTCPSackRecovery")
        per_recovery = f"{summary_drops(record) / recoveries:.1f}" if recoveries else "-"
        lines.append(
            f"| {record['name']} | {mean('TcpExtTCPHystartTrainDetect'):.1f} / {mean('TcpExtTCPHystartDelayDetect'):.1f} "
            f"| {cwnd:.0f} | {recoveries:.0f} | {per_recovery} | {mean('TcpExtTCPLossProbes'):.0f} "
            f"| {mean('TcpExtTCPTimeouts'):.1f} | {mean('TcpExtTCPSACKReorder'):.0f} "
            f"| {statistics.fmean(r['softnet_drops'] for r in runs):.0f} | {first} | {segments_per_ack(runs)} |"
        )
    if with_simulation:
        lines += [
            "",
            "fabricsim (the lab twin as the lab ran, `lab_twin()`: paced as recorded, the measured reader "
            "where recorded; seed 1) against the Linux means:",
            "",
            "| experiment | goodput total (Mbps) | per flow (Mbps) | Jain | drops | retransmits | RTOs "
            "| recoveries | drops / recovery | JCT (s) |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for record in experiments:
            sim = simulate_recorded(record)
            flows = ", ".join(f"{f['goodput_bps'] / 1e6:.0f}" for f in sim["flows"])
            jct = f"{sim['job_completion_s']:.3f}" if sim["job_completion_s"] else "-"
            per_recovery = f"{sim['drops'] / sim['recoveries']:.1f}" if sim["recoveries"] else "-"
            lines.append(
                f"| {record['name']} | {sim['total_goodput_bps'] / 1e6:.1f} | {flows} | {sim['jain_index']:.3f} "
                f"| {sim['drops']} | {sim['retransmits']} | {sim['timeouts']} | {sim['recoveries']} "
                f"| {per_recovery} | {jct} |"
            )
    return "\n".join(lines)
