"""The fabricsim twin: the :func:`scenario` of a setup, the lab as it ran a recorded
experiment (:func:`lab_twin`: the senders' pacing, the receiving application measured in
the lab, the lab machine as a host model) and :func:`simulate`."""

from __future__ import annotations

import statistics
from typing import Any, Optional, Sequence

from fabricsim.units import parse_rate
from fabricsim.validation.dumbbell.episodes import cycles
from fabricsim.validation.dumbbell.setup import _CC_TO_FABRICSIM, LAB_TRUESIZE_OVERHEAD, DumbbellSetup, jain_index
from fabricsim.validation.linux import ETH_HEADER

#: The lab kernel's ``CONFIG_HZ`` (its /proc/config.gz; recorded as ``config_hz`` in
#: the environment of newer records): the twin's CUBIC counts time in these jiffies.
LAB_CONFIG_HZ = 250
#: The lab kernel's CUBIC holds its increase for ``HZ / 32`` jiffies while cwnd is
#: unchanged (``tcp.cubic_hold_hz32``), not ``min(HZ / 32, delay_min)``: its compiled
#: ``cubictcp_cong_avoid`` compares ``jiffies - last_time`` with the constant 7 (HZ / 32
#: at 250 Hz) and calls ``__usecs_to_jiffies`` once, for the curve's time only (read
#: from the running 6.18.44 kernel; docs/validation/linux.md, "The lab kernel's CUBIC
#: holds for HZ / 32"). The senders' ``ss`` trajectories show the same steps.
LAB_CUBIC_HOLD_HZ32 = True
#: Default congestion controls whose ``init`` leaves a socket paced for good:
#: BBR sets ``SK_PACING_NEEDED``, which a later ``TCP_CONGESTION`` switch does not undo.
PACING_DEFAULT_CCS = frozenset({"bbr"})


def recorded_pacing(environment: dict[str, Any]) -> Optional[str]:
    """The ``tcp.pacing`` the recorded senders ran with, from where they ran.

    iperf3 connects its data sockets first and sets ``TCP_CONGESTION``
    (``-C cubic`` / ``reno``) afterwards, so every socket is first
    initialised by the namespace's default congestion control
    (``net.ipv4.tcp_congestion_control``, recorded per namespace in the
    record's ``environment``). When that default is BBR, BBR's ``init`` sets
    ``SK_PACING_NEEDED`` and the socket keeps Linux's internal pacing
    (``tcp_internal_pacing``, at 200 % / 120 % of cwnd / SRTT) after the
    switch: the lab's sockets were read with bpftrace and every sender was
    paced so (docs/validation/linux.md, "What keeps the MTU 1500 senders
    below their window: BBR's pacing, inherited (2026-11-23)"). The twin
    then paces as Linux does (``"internal"``, docs/models/tcp-host.md);
    with any other default, or none recorded, it leaves its senders
    unpaced (``None``: the scenario's default)."""
    sysctls = environment.get("sysctls") or {}
    default = str(sysctls.get("net.ipv4.tcp_congestion_control") or "").strip()
    return "internal" if default in PACING_DEFAULT_CCS else None


def recorded_tcp(record: dict[str, Any], tcp: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The twin's ``tcp`` overrides for a recorded experiment: the senders
    paced as they ran (:func:`recorded_pacing`), then ``tcp`` (which may set
    ``pacing`` itself)."""
    pacing = recorded_pacing(record.get("environment") or {})
    return {**({"pacing": pacing} if pacing else {}), **(tcp or {})}

def scenario(
    setup: DumbbellSetup,
    one_way_latency_us: float,
    seed: int = 1,
    tcp: Optional[dict[str, Any]] = None,
    host: Optional[dict[str, Any]] = None,
    shaped_router: bool = False,
    router: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """The fabricsim scenario of ``setup`` (see the module docs for the mapping);
    ``tcp`` adds or overrides fields of its ``tcp`` section, ``host`` is its
    ``network.host`` (e.g. ``{"egress": {"jitter": True}}``), ``router`` the
    router's ``pipeline`` (e.g. :data:`LAB_ROUTER_FORWARDING`). With
    ``shaped_router`` the bottleneck is built as the lab builds it: the link
    r -> rx runs at ``access_rate`` (a veth) and the router's port towards rx
    is shaped like the lab's htb class (rate = ceil = ``rate``, burst =
    cburst = the lab's default burst) over the static buffer (the bfifo)."""
    senders = [f"s{i}" for i in range(setup.senders)]
    # Two links on the path from a sender to rx: half the one-way latency on each.
    delay_ns = max(0, round(one_way_latency_us * 1000 / 2))
    nodes = [{"name": s, "kind": "host"} for s in senders] + [
        {"name": "r", "kind": "switch"},
        {"name": "rx", "kind": "host"},
    ]
    links = [{"a": s, "b": "r", "rate": setup.access_rate, "delay": f"{delay_ns}ns"} for s in senders]
    bottleneck_rate = setup.access_rate if shaped_router else setup.rate
    links.append({"a": "r", "b": "rx", "rate": bottleneck_rate, "delay": f"{delay_ns}ns"})
    switch: dict[str, Any] = {"latency": "0ns", "buffer": {"model": "static", "port_size": setup.buffer}}
    if shaped_router:
        rate_bps = parse_rate(setup.rate)
        # The lab's default burst (Lab._configure_egress): 10 frames or 100 us at the rate.
        burst = max(10 * (setup.mtu + ETH_HEADER), rate_bps // 8 // 10_000)
        if setup.shaper == "htb":
            shaper = {"rate": setup.rate, "ceil": setup.rate, "burst": f"{burst}B", "cburst": f"{burst}B"}
        else:  # tbf: one bucket, sent at the link's (veth's) speed
            shaper = {"rate": setup.rate, "ceil": setup.access_rate, "burst": f"{burst}B", "cburst": f"{burst}B"}
        switch["shaper"] = {**shaper, "towards": ["rx"]}
    if router:
        switch["pipeline"] = router
    traffic: dict[str, Any] = {"kind": "tcp_bulk", "name": "iperf3", "src": senders, "dst": "rx"}
    traffic["streams"] = setup.flows_per_sender
    if setup.size:
        traffic["size"] = setup.size
        duration = "120s"
    else:
        traffic["duration"] = f"{setup.duration_s:g}s"
        duration = f"{setup.duration_s:g}s"
    return {
        "name": f"linux-dumbbell-{setup.name}",
        "description": "twin of the real-Linux dumbbell (fabricsim.validation.linux_dumbbell)",
        "seed": seed,
        "duration": duration,
        "network": {
            "ethernet_overhead": "0B",
            "classes": 1,
            "switch": switch,
            **({"host": host} if host else {}),
        },
        "topology": {"kind": "explicit", "nodes": nodes, "links": links},
        "tcp": {
            "cc": _CC_TO_FABRICSIM[setup.cc],
            # Linux CUBIC counts time in the kernel's jiffies.
            **({"cubic_hz": LAB_CONFIG_HZ, "cubic_hold_hz32": LAB_CUBIC_HOLD_HZ32} if setup.cc == "cubic" else {}),
            "mtu": f"{setup.mtu}B",
            "rcv_truesize_overhead": f"{LAB_TRUESIZE_OVERHEAD}B",
            "l2_header": f"{ETH_HEADER}B",
            "min_frame": "0B",
            **(tcp or {}),
        },
        "traffic": [traffic],
        "stats": {"queue_sample_interval": "0", "throughput_interval": "0"},
    }


def lab_twin(
    record: dict[str, Any], reader: Optional[bool] = None, machine: bool = False
) -> tuple[dict[str, Any], Optional[dict[str, Any]]]:
    """The ``tcp`` overrides and ``network.host`` of the lab twin as the lab
    ran a recorded experiment (the default of :func:`simulate_recorded` and
    :func:`compare`): the senders paced as they ran (:func:`recorded_tcp`)
    and, where the record has the iperf3 servers' reader counters, the
    measured reader (:func:`measured_receiver_app`; ``reader`` False: the
    ideal reader). With both, at MTU 9000 all eight recorded dumbbells are
    within 10 % of the kernel's drops (0.99-1.10, seeds 1-3), where the
    paced twin with the ideal reader loses 1.42x on one; MTU 1500 CUBIC stays
    at 1.5-3.4x (docs/validation/linux.md, "The lab twin as the lab ran
    (2026-11-23)").

    ``machine`` puts the hosts on the lab machine (:func:`lab_host_model`).
    It is not the default: it brings MTU 1500 CUBIC to 0.66-1.69x through
    the preset's ``gso: 0`` (TCP sends no GSO bursts), not through the CPU
    costs (zero-cost stages give the same, 64 KiB GSO undoes it), while the
    lab's senders built 64 KB GSO buffers (read with bpftrace). With 64 KiB
    GSO and the reader on its core (grid host ``lab-machine-gso64k``, or
    ``-rss`` with received packets spread by flow hash) it brings the unpaced
    1 Gbps dumbbells within 30 % but one, and leaves the paced MTU 1500 CUBIC
    at up to 2.8x and the traced reno-2x1 7 % short of the kernel's goodput
    (docs/validation/linux.md, "The lab machine as the twin's default, over
    every recording (2026-11-23)")."""
    app = measured_receiver_app(record) if reader is not False else None
    tcp = recorded_tcp(record, {"receiver_app": app} if app is not None else None)
    return tcp, (lab_host_model(DumbbellSetup(**record["setup"])) if machine else None)


def simulate_recorded(
    record: dict[str, Any],
    seed: int = 1,
    tcp: Optional[dict[str, Any]] = None,
    host: Optional[dict[str, Any]] = None,
    shaped_router: bool = False,
    router: Optional[dict[str, Any]] = None,
    reader: Optional[bool] = None,
    machine: bool = False,
) -> dict[str, Any]:
    """:func:`simulate` the twin of a recorded experiment: its setup, its
    measured one-way latency, and the lab as it ran (:func:`lab_twin`:
    pacing and reader; ``reader``, ``machine``: see there); ``tcp`` fields
    override the twin's, ``host`` keys its ``network.host``'s."""
    setup = DumbbellSetup(**record["setup"])
    latency = record["summary"]["one_way_latency_us"]["mean"]
    twin_tcp, twin_host = lab_twin(record, reader, machine)
    tcp = {**twin_tcp, **(tcp or {})}
    host = {**(twin_host or {}), **host} if host is not None else twin_host
    return simulate(setup, latency, seed, tcp=tcp, host=host, shaped_router=shaped_router, router=router)


def simulate(
    setup: DumbbellSetup,
    one_way_latency_us: float,
    seed: int = 1,
    tcp: Optional[dict[str, Any]] = None,
    host: Optional[dict[str, Any]] = None,
    shaped_router: bool = False,
    router: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """Run the fabricsim twin; per-flow goodput, drops, retransmits, job completion time."""
    from fabricsim.runner import run
    from fabricsim.schema import from_dict

    result = run(from_dict(scenario(setup, one_way_latency_us, seed, tcp, host, shaped_router, router)), seed=seed)
    flows = result.flows.sort("flow_id")
    duration_s = setup.duration_s
    rows = []
    for flow in flows.iter_rows(named=True):
        fct_s = flow["fct_ps"] / 1e12 if flow["fct_ps"] is not None and flow["fct_ps"] >= 0 else None
        seconds = fct_s if setup.size and fct_s else duration_s
        rows.append(
            {
                "src": flow["src"],
                "goodput_bps": 8.0 * flow["app_bytes_delivered"] / seconds if seconds else float("nan"),
                "bytes_received": flow["app_bytes_delivered"],
                "retransmits": flow["retransmits"],
                "timeouts": flow["timeouts"],
                "completion_s": fct_s,
            }
        )
    drops = int(result.drops["packets"].sum()) if result.drops.height else 0
    receivers = result.tables().get("tcp_receivers")
    acks = int(receivers["acks_sent"].sum()) if receivers is not None and receivers.height else 0
    segments = int(receivers["data_segments"].sum()) if receivers is not None and receivers.height else 0
    wakeups = int(receivers["wakeups"].sum()) if receivers is not None and receivers.height else 0
    bottleneck = result.links.filter((result.links["src"] == "r") & (result.links["dst"] == "rx"))
    queue_delay_s = float(bottleneck["queue_delay_mean_ps"][0]) / 1e12 if bottleneck.height else float("nan")
    completions = [row["completion_s"] for row in rows]
    job_completion = max(completions) if setup.size and all(c is not None for c in completions) else None
    total = sum(row["goodput_bps"] for row in rows)
    if job_completion:
        total = 8.0 * sum(row["bytes_received"] for row in rows) / job_completion
    return {
        "flows": rows,
        "total_goodput_bps": total,
        "jain_index": jain_index([row["goodput_bps"] for row in rows]),
        "drops": drops,
        "retransmits": sum(row["retransmits"] for row in rows),
        "timeouts": sum(row["timeouts"] for row in rows),
        "recoveries": int(flows["fast_retransmits"].sum()),
        "segments_per_ack": segments / acks if acks else float("nan"),
        "reads_per_s": (int(receivers["reads"].sum()) / duration_s / len(rows)) if receivers is not None and duration_s else 0.0,
        "bytes_per_wakeup": (int(receivers["bytes_read"].sum()) / wakeups) if wakeups else float("nan"),
        "mean_wakeup_delay_s": (int(receivers["wakeup_delay_ps"].sum()) / wakeups / 1e12) if wakeups else float("nan"),
        "job_completion_s": job_completion,
        "mean_queue_bytes": queue_delay_s * parse_rate(setup.rate) / 8,
        "conservation_ok": bool(result.summary.get("conservation_ok")),
        "events": result.summary.get("events"),
        "wall_time_s": result.summary.get("wall_time_s"),
    }


#: iperf3's read size for TCP (``-l`` default, 128 KiB): what each read() asks for.
IPERF3_READ_BYTES = 131_072


def _readers(record: dict[str, Any], runs: Optional[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The iperf3 servers' stats of the kept runs (or of ``runs``)."""
    return [r for run in (record["runs"] if runs is None else runs) for r in run.get("readers", [])]


def _empirical(samples_ns: Sequence[int]) -> dict[str, Any]:
    """A ``wakeup``-style distribution drawing uniformly from measured delays."""
    return {"kind": "empirical", "samples": [f"{max(0, q)}ns" for q in samples_ns]}


def reader_measurements(record: dict[str, Any], runs: Optional[Sequence[dict[str, Any]]] = None) -> Optional[dict[str, float]]:
    """Means over the kept runs (or ``runs``) of how the iperf3 servers read
    their sockets (runs recorded with /proc reader counters; None if none were)."""
    readers = _readers(record, runs)
    if not readers:
        return None
    total = lambda key: float(sum(r[key] for r in readers))  # noqa: E731
    wall = statistics.fmean(r["wall_s"] for r in readers)
    return {
        "servers": len(readers),
        "reads_per_s": total("syscalls") / len(readers) / wall,
        "bytes_per_read": total("bytes") / total("syscalls"),
        "bytes_per_wakeup": total("bytes") / max(1.0, total("voluntary_switches")),
        "delay_per_wakeup_s": total("run_delay_ns") / 1e9 / max(1.0, total("timeslices")),
        "cpu_per_byte_s": total("runtime_ns") / 1e9 / max(1.0, total("bytes")),
    }


def traced_wakeups_ns(record: dict[str, Any], runs: Optional[Sequence[dict[str, Any]]] = None) -> Optional[list[int]]:
    """The iperf3 servers' wake-up delays as the scheduler trace recorded them:
    every server's quantile points, pooled (each server weighs the same); None
    unless every server of the runs was traced."""
    readers = _readers(record, runs)
    if not readers or any(not (r.get("sched") or {}).get("wakeup_quantiles_ns") for r in readers):
        return None
    return [q for r in readers for q in r["sched"]["wakeup_quantiles_ns"]]


def traced_preemption(record: dict[str, Any], runs: Optional[Sequence[dict[str, Any]]] = None) -> Optional[dict[str, Any]]:
    """``tcp.receiver_app.preemption`` from the scheduler trace: the chance of a
    wait per ``read()`` call that returned data (preemptions / data reads, over
    all servers: an upper bound, as some preemptions find nothing left to
    read) and the waits drawn from the servers' pooled quantile points; None
    unless every server was traced and read something."""
    readers = _readers(record, runs)
    scheds = [r.get("sched") or {} for r in readers]
    if not scheds or any(not s.get("data_reads") for s in scheds):
        return None
    waits = [q for s in scheds for q in s.get("preemption_quantiles_ns", [])]
    preemptions = sum(s.get("preemptions", 0) for s in scheds)
    if not waits or not preemptions:
        return None
    return {
        "probability": min(1.0, preemptions / sum(s["data_reads"] for s in scheds)),
        "wait": _empirical(waits),
    }


def traced_loop_time_ns(record: dict[str, Any], runs: Optional[Sequence[dict[str, Any]]] = None) -> Optional[int]:
    """``tcp.receiver_app.loop_time`` from the scheduler trace: the mean time
    from a server's last read that returned data to its going to sleep (over
    all servers' sleeps). It is measured where no data arrived meanwhile (data
    arriving then keeps the server reading), so it is a lower bound; None
    unless every server was traced with it."""
    readers = _readers(record, runs)
    scheds = [r.get("sched") or {} for r in readers]
    if not scheds or any(not s.get("loop_tails") for s in scheds):
        return None
    total = sum(s["loop_tails"] for s in scheds)
    return round(sum(s["loop_tails"] * s["loop_tail_mean_ns"] for s in scheds) / total)


def measured_receiver_app(
    record: dict[str, Any],
    runs: Optional[Sequence[dict[str, Any]]] = None,
    traced: bool = False,
    loop: bool = False,
) -> Optional[dict[str, Any]]:
    """``tcp.receiver_app`` from the recorded reader measurements, taken as
    measured (not fitted): the wake-up delay exponential with the mean
    scheduling delay per time the server was scheduled (schedstat
    ``run_delay / pcount``), or, with ``traced`` where the runs were traced,
    drawn from the servers' traced wake-up delays (:func:`traced_wakeups_ns`,
    ``empirical``) with the preemptions between reads
    (:func:`traced_preemption`) and, with ``loop`` too, the rest of the read
    loop (:func:`traced_loop_time_ns`); the copy rate from the server's CPU time per
    byte read (an upper bound on the copy time: it includes the rest of the
    server's loop and the protocol work done in its context), and iperf3's
    read size (``-l``, 128 KiB)."""
    m = reader_measurements(record, runs)
    if m is None:
        return None
    samples = traced_wakeups_ns(record, runs) if traced else None
    if samples:
        wakeup = _empirical(samples)
    else:
        wakeup = {"kind": "exponential", "delay": f"{max(1, round(m['delay_per_wakeup_s'] * 1e9))}ns"}
    app = {
        "read_size": f"{IPERF3_READ_BYTES}B",
        "wakeup": wakeup,
        "copy_rate": f"{max(1, round(8 / m['cpu_per_byte_s']))}bps",
    }
    preemption = traced_preemption(record, runs) if samples else None
    if preemption is not None:
        app["preemption"] = preemption
    loop_ns = traced_loop_time_ns(record, runs) if samples and loop else None
    if loop_ns:
        app["loop_time"] = f"{loop_ns}ns"
    return app

#: The router namespace's cost to forward one packet (data or ACK), ns: the
#: fixed part of one end's share of the lab's measured TCP/IP-over-veth cost,
#: (1214 - 18 x 0.342) / 2 = 604 ns (preset ``linux-veth``; an assumption:
#: forwarding skips TCP and the copies, whose cost is the per-byte part, but
#: crosses IP input and output and a veth transmit, as one end does).
LAB_ROUTER_FORWARDING_NS = 604

#: The router's forwarding CPU as a pipeline on the twin's router (a switch):
#: one pipe for all ports, each packet holds it for
#: :data:`LAB_ROUTER_FORWARDING_NS`, waiting packets queue per input port up to
#: ``netdev_max_backlog`` (1000, the kernel's default). Its CPU is its own
#: (not the hosts' cores) and it serves one packet at a time, not in batches.
LAB_ROUTER_FORWARDING: dict[str, Any] = {
    "rate": f"{round(1e9 / LAB_ROUTER_FORWARDING_NS)}pps",
    "queue_packets": 1000,
}


def lab_host_model(setup: DumbbellSetup, forwarding: bool = False, **overrides: Any) -> dict[str, Any]:
    """``network.host`` giving the twin's hosts the lab machine: the host
    datapath model with the lab's measured per-packet veth and stack costs
    (preset ``linux-veth``, docs/models/host.md) and every namespace on one
    2-core machine (``machines``), as they shared the lab's 2 CPUs.

    With ``forwarding``, the router's forwarding cost
    (:data:`LAB_ROUTER_FORWARDING_NS` per packet) is charged to the core
    that sends the packet (a ``driver`` stage on transmit: data on the
    senders, ACKs on ``rx``), since a veth's ``netif_rx`` hands the packet
    to a CPU of the same machine whose softirq runs the router's IP
    forwarding: the router's work then competes for the shared cores. The
    lab's forwarding ran later, from that CPU's input backlog in batches
    (segments waited 447-685 us there); here it runs before the packet
    leaves its host. ``overrides`` are further model keys (e.g. ``gso``)."""
    from fabricsim.hosts import linux_veth

    hosts = [f"s{i}" for i in range(setup.senders)] + ["rx"]
    model: dict[str, Any] = {"preset": "linux-veth", "machines": [hosts], **overrides}
    if forwarding:
        cost = f"{LAB_ROUTER_FORWARDING_NS}ns"
        model["stages"] = [
            *overrides.get("stages", linux_veth.MODEL["stages"]),
            {"kind": "driver", "name": "router_forwarding", "tx": {"per_packet": cost, "per_ack": cost}},
        ]
    return {"model": model}


def twin_window_cycles(record: dict[str, Any], seed: int = 1, skip_s: float = 2.0,
                       shaped_router: bool = False) -> dict[str, Any]:
    """:func:`~fabricsim.validation.dumbbell.episodes.cycles` of the twin of a recorded
    single-flow point, from its ``tcp_trace`` (``shaped_router``: the bottleneck as the
    lab builds it, see :func:`scenario`)."""
    from fabricsim.runner import run
    from fabricsim.schema import from_dict

    setup = DumbbellSetup(**record["setup"])
    tcp, host = lab_twin(record, None, False)
    doc = scenario(setup, record["summary"]["one_way_latency_us"]["mean"], seed, tcp, host, shaped_router)
    doc.setdefault("stats", {})["tcp_trace"] = {"max_rows": 4_000_000}
    trace = run(from_dict(doc), seed=seed).tables()["tcp_trace"].filter(flow_id=0).sort("time_ps")
    rows = trace.select("time_ps", "event", "cwnd_segments", "state").rows()
    acks = [(t / 1e12, c) for t, e, c, _ in rows if e == "ack"]
    t0 = rows[0][0] if rows else 0
    # An entry from Disorder: the ACK row before it had SACKed data and no loss proven.
    last_ack_state, via = None, 0
    for t, e, _, state in rows:
        if e == "recovery_start" and last_ack_state == "disorder" and (t - t0) / 1e12 >= skip_s:
            via += 1
        elif e == "ack":
            last_ack_state = state
    ends = [(t / 1e12, c) for t, e, c, _ in rows if e == "recovery_end"]
    return cycles(acks, [t / 1e12 for t, e, _, _ in rows if e == "recovery_start"],
                  [t for t, _ in ends], skip_s, via, exit_cwnds=[c for _, c in ends])
