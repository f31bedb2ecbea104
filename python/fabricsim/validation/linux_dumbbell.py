"""TCP through one shaped bottleneck in real Linux, and the same experiment in fabricsim.

Topology (:func:`topology`)::

    s0 ──┐
    s1 ──┤ veth (unshaped)      htb/tbf at ``rate``, bfifo of ``buffer``
    ...  ├───────────────── r ────────────────────────────────────────── rx
    sN ──┘                 (router namespace)

Each sender runs one iperf3 client (``flows_per_sender`` streams, ``-C reno``
or ``-C cubic``) to its own server on ``rx`` for ``duration_s`` seconds, or,
with ``size``, ``flows_per_sender`` sized transfers of ``size`` bytes
(:meth:`Lab.transfers`, which times the receiver's last byte: the job
completion time). The only queue that can build is the bfifo on the
router's egress towards ``rx``; the access veths have no qdisc (``noqueue``)
and forward as fast as the CPU lets them. Every namespace gets the kernel's
default TCP buffer sysctls (``tcp_rmem`` 4096 131072 6291456, ``tcp_wmem`` 4096
16384 4194304) so that the result does not depend on the host's tuning.

:func:`scenario` builds the fabricsim twin: an explicit topology with the
senders' NICs at ``access_rate``, the router as a switch with a static buffer
of ``buffer`` bytes per port and no pipeline latency, the bottleneck link at
``rate``, and link delays that reproduce the measured unloaded one-way
latency (sockperf UDP ping-pong, half a round trip, split over the two links
of the path). Frames are counted as the veth queue counts them: IP packet +
14 B Ethernet header, no preamble, gap or minimum frame size. TCP is left at
the scenario defaults (the ``cc`` is set; CUBIC counts 250 Hz jiffies and
holds for HZ / 32). A recorded experiment's twin (:func:`simulate_recorded`,
:func:`compare`) also paces its senders as the recorded ones ran
(:func:`recorded_pacing`: Linux's internal pacing when the namespaces'
default congestion control was BBR, which every recording had before
:data:`UNPACED_RESULTS`, whose setups make the experiment's own CC every
namespace's default: :attr:`DumbbellSetup.unpaced`).

:func:`measure` runs the Linux side (root) and returns a JSON-ready record;
:func:`compare` runs the fabricsim side and lines both up.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Optional, Sequence

from fabricsim.units import parse_rate, parse_size
from fabricsim.validation.linux import (
    CC_SYSCTL,
    ETH_HEADER,
    Iperf3Job,
    Lab,
    LabError,
    Topology,
    Transfer,
    environment,
)

__all__ = [
    "DumbbellSetup",
    "RESULTS",
    "compare",
    "measure",
    "recorded",
    "scenario",
    "kernel_recoveries",
    "lab_host_model",
    "lab_twin",
    "recorded_pacing",
    "recorded_tcp",
    "simulate",
    "simulate_recorded",
    "topology",
]

#: Recorded Linux measurements (``python -m fabricsim.validation.linux_dumbbell record``).
RESULTS = Path(__file__).resolve().parent / "data" / "dumbbell.json"
#: The 20 s 2x1 and 4x1 setups (MTU 1500 and 9000) recorded again with the scheduler trace.
TRACED_RESULTS = RESULTS.with_name("dumbbell-traced.json")
#: The 20 s 2x1 and 4x1 dumbbells at MTU 1500 with unpaced senders (:attr:`DumbbellSetup.unpaced`)
#: at a bottleneck rate the lab's CPUs keep up with (``record --unpaced --rate ...``).
UNPACED_RESULTS = RESULTS.with_name("dumbbell-unpaced.json")
#: The eight dumbbells of :data:`UNPACED_RESULTS` recorded again five and six hours later on the
#: replaced lab machine (same commands and sysctls): the kernel's own drops moved 0.51-1.57x.
UNPACED_AGAIN_RESULTS = RESULTS.with_name("dumbbell-unpaced-again.json")
#: The four MTU 9000 dumbbells of :data:`RESULTS` recorded again 17 hours later on the replaced lab
#: machine (same command): the kernel's drops repeat within 1 %.
MTU9000_AGAIN_RESULTS = RESULTS.with_name("dumbbell-mtu9000-again.json")
#: The kernel's built-in TCP buffer defaults, set in every namespace of the experiment.
TCP_SYSCTLS = {"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"}
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
_CC_TO_FABRICSIM = {"reno": "newreno", "cubic": "cubic"}
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


@dataclass(frozen=True)
class DumbbellSetup:
    """One dumbbell experiment; sizes and rates take units (``"250KB"``, ``"1Gbps"``)."""

    senders: int = 2
    flows_per_sender: int = 1
    cc: str = "cubic"
    rate: str = "1Gbps"
    shaper: str = "htb"
    buffer: str = "250KB"
    mtu: int = 1500
    duration_s: float = 20.0
    size: Optional[str] = None
    access_rate: str = "10Gbps"
    #: Every namespace's default congestion control (``net.ipv4.tcp_congestion_control``)
    #: set to ``cc``, so each socket starts with it rather than with the machine's default
    #: (BBR here, whose ``init`` leaves the socket paced after iperf3 switches it:
    #: :func:`recorded_pacing`): Reno and CUBIC sockets run unpaced, as on servers whose
    #: default is CUBIC. False: the namespaces inherit the machine's default.
    unpaced: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.senders <= 16:
            raise LabError(f"senders: must be 1..16 (got {self.senders})")
        if self.cc not in _CC_TO_FABRICSIM:
            raise LabError(f"cc: unknown value {self.cc!r}; allowed: {', '.join(_CC_TO_FABRICSIM)}")
        for name, parse in (("rate", parse_rate), ("buffer", parse_size), ("access_rate", parse_rate)):
            try:
                parse(getattr(self, name))
            except ValueError as exc:
                raise LabError(f"{name}: {exc}") from None
        if self.size is not None:
            try:
                parse_size(self.size)
            except ValueError as exc:
                raise LabError(f"size: {exc}") from None

    @property
    def name(self) -> str:
        length = f"{self.size}" if self.size else f"{self.duration_s:g}s"
        mtu = f"-mtu{self.mtu}" if self.mtu != 1500 else ""
        unpaced = "-unpaced" if self.unpaced else ""
        return f"{self.cc}-{self.senders}x{self.flows_per_sender}-{self.rate}-{self.buffer}-{length}{mtu}{unpaced}"

    @property
    def flows(self) -> int:
        return self.senders * self.flows_per_sender


def topology(setup: DumbbellSetup) -> Topology:
    """The Linux topology of ``setup``."""
    senders = [f"s{i}" for i in range(setup.senders)]
    links: list[dict[str, Any]] = [{"a": s, "b": "r", "mtu": setup.mtu} for s in senders]
    links.append(
        {
            "a": "r",
            "b": "rx",
            "mtu": setup.mtu,
            "egress": {"r": {"rate": setup.rate, "shaper": setup.shaper, "queue": "bfifo", "limit": setup.buffer}},
        }
    )
    sysctls = {**TCP_SYSCTLS, **({CC_SYSCTL: setup.cc} if setup.unpaced else {})}
    return Topology.from_dict({"hosts": senders + ["rx"], "routers": ["r"], "links": links, "sysctls": sysctls})


def _jobs(setup: DumbbellSetup) -> list[Iperf3Job]:
    return [
        Iperf3Job(
            src=f"s{i}",
            dst="rx",
            cc=setup.cc,
            streams=setup.flows_per_sender,
            duration_s=setup.duration_s,
            interval_s=0.1,
        )
        for i in range(setup.senders)
    ]


def _mean_sd(values: Sequence[float]) -> dict[str, float]:
    values = list(values)
    if not values:
        return {"mean": float("nan"), "sd": float("nan"), "n": 0}
    return {
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
        "n": len(values),
    }


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (1 = equal shares)."""
    values = list(values)
    square = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * square) if square > 0 else float("nan")


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
) -> dict[str, Any]:
    """Run ``setup`` in real Linux ``repeats`` times (root); a JSON-ready record.

    Each repeat builds a fresh lab (fresh TCP metrics, fresh qdisc counters).
    A run whose total goodput stays below ``starved_share`` of the
    bottleneck's payload rate, or that lost packets in a CPU's input backlog
    (softnet drops), was limited by the CPU rather than by the bottleneck
    (the machine is shared): it is set aside (kept under ``starved_runs``)
    and run again after ``pause_s``, up to ``max_attempts`` runs in all
    (default ``3 * repeats``). ``nice`` is the niceness of the traffic
    processes (:class:`Lab`).
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
            run = _one_run(setup, lab, latency_s)
        run["attempt"] = attempt
        run["nice"] = nice
        if run["total_goodput_bps"] < starved_share * payload_rate_bps(setup) or run["softnet_drops"] > 0:
            starved.append(run)
        else:
            run["repeat"] = len(runs)
            runs.append(run)
    if not runs:
        raise LabError(f"{setup.name}: every run was limited by the CPU (the machine is busy); try again later")
    one_way = [r["one_way_latency_us"]["percentiles_us"].get("p50", r["one_way_latency_us"]["avg_us"]) for r in runs]
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


def _one_run(setup: DumbbellSetup, lab: Lab, latency_s: float) -> dict[str, Any]:
    latency = lab.sockperf_pingpong("s0", "rx", message_bytes=64, duration_s=latency_s)
    if setup.size:
        size = parse_size(setup.size)
        transfers = [
            Transfer(src=f"s{i}", dst="rx", bytes=size, cc=setup.cc)
            for i in range(setup.senders)
            for _ in range(setup.flows_per_sender)
        ]
        run = lab.transfers(transfers, sample_interval_s=0.25)
    else:
        run = lab.iperf3(_jobs(setup), sample_interval_s=0.25)
    queue = run.qdisc("r", "rx")
    shaper = run.qdisc("r", "rx", leaf=False)
    senders = [f"s{i}" for i in range(setup.senders)]
    nstat = {key: sum(run.nstat.get(s, {}).get(key, 0) for s in senders) for key in NSTAT_KEYS}
    return {
        "one_way_latency_us": asdict(latency),
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
        "writers": [w.to_dict() for w in run.writers],
        "softnet_drops": run.softnet_drops,
        "cpu_busy_s": run.cpu.busy_s,
        "iperf3_cpu_s": run.iperf3_cpu_s,
        "wall_s": run.wall_s,
        "load_before": run.load_before,
        "load_after": run.load_after,
    }


# --------------------------------------------------------------------------- the fabricsim twin


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


def kernel_recoveries(record: dict[str, Any]) -> float:
    """The kernel's SACK recoveries (loss episodes) per kept run of a recorded experiment."""
    return statistics.fmean(r["nstat_senders"].get("TcpExtTCPSackRecovery", 0) for r in record["runs"])


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


def recorded(path: Path = RESULTS) -> list[dict[str, Any]]:
    """The recorded Linux experiments (no root needed)."""
    if not path.exists():
        raise LabError(f"no recorded Linux results at {path}")
    return list(json.loads(path.read_text())["experiments"])


#: The experiments recorded in :data:`RESULTS`.
REFERENCE_SETUPS = tuple(
    [DumbbellSetup(senders=n, cc=cc) for cc in ("reno", "cubic") for n in (2, 4)]
    + [DumbbellSetup(senders=4, cc=cc, size="100MB") for cc in ("reno", "cubic")]
    + [DumbbellSetup(senders=1, cc=cc, buffer="2MB", duration_s=10.0) for cc in ("reno", "cubic")]
    # Slow-start exit with HyStart on a buffer larger than the window it reaches: no loss expected.
    + [DumbbellSetup(senders=1, cc="cubic", buffer="8MB", duration_s=10.0)]
    # Jumbo frames: ~6x fewer packets per second, so the lab measures TCP rather than CPU starvation.
    + [DumbbellSetup(senders=n, cc=cc, mtu=9000) for cc in ("reno", "cubic") for n in (2, 4)]
)


def dumbbells(
    rate: str, buffer: Optional[str] = None, duration_s: float = 20.0, unpaced: bool = False, mtu: int = 1500
) -> tuple[DumbbellSetup, ...]:
    """The 2x1 and 4x1 Reno and CUBIC dumbbells at ``rate``; ``buffer`` by
    default holds the same queueing time as 250 KB at 1 Gbps (2 ms)."""
    if buffer is None:
        buffer = f"{round(parse_rate(rate) * 0.002 / 8 / 1000):d}KB"
    return tuple(
        DumbbellSetup(senders=n, cc=cc, rate=rate, buffer=buffer, duration_s=duration_s, unpaced=unpaced, mtu=mtu)
        for cc in ("reno", "cubic")
        for n in (2, 4)
    )


def _main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m fabricsim.validation.linux_dumbbell")
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="measure the reference setups in Linux (root) and write the results JSON")
    rec.add_argument("--out", type=Path, default=RESULTS)
    rec.add_argument("--repeats", type=int, default=3)
    rec.add_argument("--max-attempts", type=int, help="runs in all, CPU-starved ones included (3 x repeats)")
    rec.add_argument("--nice", type=int, default=0, help="niceness of the traffic processes (negative: priority)")
    rec.add_argument("--only", action="append", default=[], help="only setups whose name contains this")
    rec.add_argument(
        "--unpaced",
        action="store_true",
        help="every namespace's default congestion control is the experiment's (no BBR pacing inherited)",
    )
    rec.add_argument("--rate", help="record the 2x1 and 4x1 Reno and CUBIC dumbbells at this bottleneck rate")
    rec.add_argument("--buffer", help="their bfifo (default: 2 ms at --rate, as 250KB at 1Gbps)")
    rec.add_argument("--duration", type=float, default=DumbbellSetup.duration_s, help="their seconds (default 20)")
    rec.add_argument("--pause", type=float, default=20.0, help="seconds between a starved run and the next")
    md = sub.add_parser("markdown", help="print the tables of the recorded results (and their fabricsim twins)")
    md.add_argument("--path", type=Path, default=RESULTS)
    md.add_argument("--no-simulation", action="store_true")
    md.add_argument("--only", action="append", default=[], help="only experiments whose name contains this")
    rd = sub.add_parser("readers", help="Linux against the twin with the ideal and the measured reader")
    rd.add_argument("--path", type=Path, default=RESULTS)
    rd.add_argument("--seeds", type=int, default=3)
    rd.add_argument("--only", action="append", default=[], help="only experiments whose name contains this")
    tw = sub.add_parser("twin", help="Linux against the lab twin over seeds, with the lab's CPU headroom")
    tw.add_argument("--path", type=Path, default=RESULTS)
    tw.add_argument("--seeds", type=int, default=3)
    tw.add_argument("--only", action="append", default=[], help="only experiments whose name contains this")
    cd = sub.add_parser("cadence", help="the kernel's receiver (ACKs, backlog, reads, RTT outside the bfifo) against the twin's")
    cd.add_argument("--path", type=Path, default=UNPACED_RESULTS)
    cd.add_argument("--seed", type=int, default=1)
    cd.add_argument("--only", action="append", default=[], help="only experiments whose name contains this")
    cd.add_argument("--host", choices=list(GRID_DIMENSIONS["host"]), default="ideal", help="the twin's hosts")
    gr = sub.add_parser("grid", help="the twin over pacing x host model x router CPU x reader, as ratios to Linux")
    gr.add_argument("--path", type=Path, action="append", help="recordings (default: both)")
    gr.add_argument("--seeds", type=int, default=3)
    gr.add_argument("--workers", type=int, default=1)
    gr.add_argument("--only", action="append", default=[], help="only experiments whose name contains this")
    gr.add_argument("--json", type=Path, help="also write every row (per seed) here")
    for dim, values in GRID_DIMENSIONS.items():
        gr.add_argument(f"--{dim}", action="append", choices=list(values), help=f"only these {dim} values")
    args = parser.parse_args(argv)

    def selected(path: Path) -> list[dict[str, Any]]:
        return [e for e in recorded(path) if not args.only or any(part in e["name"] for part in args.only)]

    if args.command == "readers":
        experiments = selected(args.path)
        print(reader_markdown(experiments, seeds=tuple(range(1, args.seeds + 1))))
        print()
        print(reader_runs_markdown(experiments))
        return 0
    if args.command == "grid":
        only = {dim: getattr(args, dim) for dim in GRID_DIMENSIONS if getattr(args, dim)}
        all_rows = []
        for path in args.path or [RESULTS, TRACED_RESULTS]:
            experiments = [e for e in selected(path) if e["setup"]["size"] is None and e["setup"]["senders"] > 1]
            rows = twin_grid(experiments, tuple(range(1, args.seeds + 1)), args.workers, only)
            all_rows += [{"recording": path.name, **row} for row in rows]
            print(f"{path.name}:\n\n{grid_markdown(experiments, rows)}\n", flush=True)
        if args.json:
            args.json.write_text(json.dumps(all_rows, indent=0) + "\n")
        return 0
    if args.command == "cadence":
        print(cadence_markdown(selected(args.path), seed=args.seed, host=args.host))
        return 0
    if args.command == "twin":
        print(twin_markdown(selected(args.path), seeds=tuple(range(1, args.seeds + 1))))
        return 0
    if args.command == "markdown":
        print(markdown(selected(args.path), with_simulation=not args.no_simulation))
        return 0
    existing = {e["name"]: e for e in recorded(args.out)} if args.out.exists() else {}
    setups = REFERENCE_SETUPS
    if args.rate or args.unpaced:
        setups = dumbbells(args.rate or "1Gbps", args.buffer, args.duration, args.unpaced)
    elif args.buffer or args.duration != DumbbellSetup.duration_s:
        parser.error("record: --buffer and --duration apply to the dumbbells of --rate or --unpaced")
    # Experiments of the file that are not among these setups stay, first.
    names = {setup.name for setup in setups}
    experiments = [e for name, e in existing.items() if name not in names]
    for setup in setups:
        if args.only and not any(part in setup.name for part in args.only):
            if setup.name in existing:
                experiments.append(existing[setup.name])
            continue
        print(f"measuring {setup.name} ({args.repeats} repeats)", flush=True)
        try:
            experiments.append(
                measure(setup, repeats=args.repeats, max_attempts=args.max_attempts, nice=args.nice, pause_s=args.pause)
            )
        except LabError as exc:
            print(f"  {exc}", flush=True)
            if setup.name in existing:
                experiments.append(existing[setup.name])
            continue
        _write(args.out, experiments)
    # The setups after the last one measured were kept above but not yet written.
    _write(args.out, experiments)
    return 0


def _write(path: Path, experiments: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"experiments": experiments}, indent=1)
    # Lists of plain numbers (samples, quantile points) on one line each.
    text = re.sub(r"\[\s*(-?[\d.e+-]+(?:,\s*-?[\d.e+-]+)*)\s*\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text)
    path.write_text(text + "\n")


if __name__ == "__main__":
    raise SystemExit(_main())
