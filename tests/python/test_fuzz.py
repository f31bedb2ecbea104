"""Generated scenarios (hypothesis): every one is refused with field errors or
runs to its end, with simulated time advancing, packets conserved and buffer
accounting back in balance, within a time limit per case.

The default run tries a few dozen scenarios in a fixed order (tens of
seconds); ``python -m pytest -m slow tests/python/test_fuzz.py`` tries many
more, in a random order.
"""

import contextlib
import json
import signal
import threading
import time
from datetime import timedelta

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fabricsim  # noqa: E402
from fabricsim import ScenarioError  # noqa: E402

CASE_LIMIT_S = 30.0
"""Wall time one generated scenario may take (validation, flow generation, the run)."""

rates = st.sampled_from(["1Gbps", "10Gbps", "25Gbps", "40Gbps", "100Gbps"])
delays = st.sampled_from(["0s", "100ns", "1us", "10us", "100us", "1ms"])
sizes = st.sampled_from(["1B", "64B", "1KB", "10KB", "100KB", "1MB"])


@st.composite
def topologies(draw):
    kind = draw(st.sampled_from(["star", "dumbbell", "leaf_spine"]))
    link = {"rate": draw(rates), "delay": draw(delays)}
    if draw(st.booleans()):
        link["loss"] = draw(st.sampled_from([0.0, 0.001, 0.05]))
    if kind == "star":
        n = draw(st.integers(2, 8))
        return {"kind": "star", "hosts": n, "link": link}, [f"h{i}" for i in range(n)]
    if kind == "dumbbell":
        left, right = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        bottleneck = {"rate": draw(rates), "delay": draw(delays)}
        hosts = [f"left{i}" for i in range(left)] + [f"right{i}" for i in range(right)]
        return {"kind": "dumbbell", "left": left, "right": right, "edge_link": link,
                "bottleneck_link": bottleneck}, hosts
    leaves = draw(st.integers(1, 3))
    per_leaf = draw(st.integers(2 if leaves == 1 else 1, 3))  # at least two hosts
    topo = {"kind": "leaf_spine", "leaves": leaves, "spines": draw(st.integers(1, 2)), "hosts_per_leaf": per_leaf,
            "links_per_spine": draw(st.integers(1, 2)), "host_link": link,
            "fabric_link": {"rate": draw(rates), "delay": draw(delays)}}
    return topo, [f"h{i}" for i in range(leaves * per_leaf)]


@st.composite
def tcp_settings(draw):
    tcp = {}
    if draw(st.booleans()):
        tcp["pacing_rate"] = draw(st.sampled_from(["100Mbps", "2Gbps", "10Gbps", "20Gbps", "400Gbps"]))
    if draw(st.booleans()):
        tcp["cc"] = draw(st.sampled_from(["newreno", "cubic", "dctcp"]))
    if draw(st.booleans()):
        tcp["rwnd"] = draw(st.sampled_from(["1448B", "4KB", "64KB", "1MB"]))
    if draw(st.booleans()):
        tcp["init_cwnd"] = draw(st.integers(1, 20))
    if draw(st.booleans()):
        tcp["min_rto"] = draw(st.sampled_from(["0s", "10us", "1ms", "200ms"]))
    if draw(st.booleans()):
        tcp["delayed_ack"] = {"count": draw(st.integers(1, 4)), "timeout": draw(st.sampled_from(["0s", "1us", "1ms"]))}
    return tcp


@st.composite
def traffic_entries(draw, hosts):
    kind = draw(st.sampled_from(["udp_cbr", "udp_poisson", "burst", "tcp_bulk", "tcp_incast", "tcp_flows",
                                 "workload", "rdma_write", "rdma_flows"]))
    host = st.sampled_from(hosts)
    src = draw(host)
    others = [h for h in hosts if h != src]
    dst = draw(st.sampled_from(others))  # mostly valid pairs; bad ones are tested elsewhere
    start = draw(st.sampled_from(["0s", "1us", "50us"]))
    if kind in ("udp_cbr", "udp_poisson"):
        return {"kind": kind, "src": src, "dst": dst, "start": start,
                "rate": draw(st.sampled_from(["1%", "50%", "100%", "1Gbps", "100Gbps"])),
                "frame_size": draw(st.sampled_from(["64B", "1500B", "9000B"]))}
    if kind == "burst":
        return {"kind": "burst", "src": src, "dst": dst, "frames": draw(st.integers(1, 500)), "start": start}
    if kind == "tcp_bulk":
        entry = {"kind": "tcp_bulk", "src": src, "dst": dst, "start": start, "streams": draw(st.integers(1, 3))}
        if draw(st.booleans()):
            entry["size"] = draw(sizes)
        else:
            entry["duration"] = draw(st.sampled_from(["1us", "100us", "1ms"]))
        if draw(st.booleans()):
            entry["tcp"] = draw(tcp_settings())
        return entry
    if kind == "tcp_incast":
        servers = draw(st.lists(st.sampled_from([h for h in hosts if h != dst]), min_size=1, max_size=4))
        return {"kind": "tcp_incast", "client": dst, "servers": servers, "response_size": draw(sizes),
                "rounds": draw(st.integers(1, 3)), "gap": draw(st.sampled_from(["0s", "10us"]))}
    if kind == "tcp_flows":
        flows = []
        for _ in range(draw(st.integers(1, 5))):
            a = draw(host)
            flows.append({"src": a, "dst": draw(st.sampled_from([h for h in hosts if h != a])), "size": draw(sizes),
                          "start": draw(st.sampled_from(["0s", "5us"]))})
        return {"kind": "tcp_flows", "flows": flows}
    if kind == "rdma_flows":
        flows = []
        for j in range(draw(st.integers(1, 5))):
            a = draw(host)
            flow = {"src": a, "dst": draw(st.sampled_from([h for h in hosts if h != a])), "size": draw(sizes),
                    "start": draw(st.sampled_from(["0s", "5us"]))}
            if j and draw(st.booleans()):  # waits for earlier transfers of the list
                flow["after"] = draw(st.lists(st.integers(0, j - 1), min_size=1, max_size=2, unique=True))
                flow["compute"] = draw(st.sampled_from(["0s", "2us"]))
            flows.append(flow)
        return {"kind": "rdma_flows", "flows": flows}
    if kind == "workload":
        return {"kind": "workload", "cdf": draw(st.sampled_from(["websearch_dctcp", "fb_hadoop_homa"])),
                "load": draw(st.sampled_from(["10%", "50%", "90%"])),
                "load_scale": draw(st.sampled_from([1.0, 0.01, 20.0])), "max_flows": 2000}
    rdma = {"kind": "rdma_write", "src": src, "dst": dst, "qps": draw(st.integers(1, 3)),
            "messages": draw(st.integers(1, 4)), "message_size": draw(sizes), "window": draw(st.integers(1, 3))}
    if draw(st.booleans()):
        rdma["roce"] = {"recovery": "selective_repeat", "dupthresh": draw(st.sampled_from([1, 3, 64])),
                        "rto": draw(st.sampled_from(["10us", "1ms"]))}
    return rdma


@st.composite
def scenarios(draw):
    topology, hosts = draw(topologies())
    buffer = draw(st.sampled_from([
        {"model": "static", "port_size": "100KB"},
        {"model": "static", "port_size": "10MB"},
        {"model": "shared", "size": "2MB"},
        {"model": "voq", "size": "50MB", "voq_limit": "1ms"},
        {"model": "intelligent", "size": "4MB"},
    ]))
    switch = {"buffer": buffer}
    if draw(st.booleans()):
        switch["ecn"] = {"threshold": draw(st.sampled_from(["3KB", "30KB"]))}
    if draw(st.booleans()):
        switch["scheduler"] = "drr"
    if buffer["model"] == "shared" and draw(st.booleans()):
        switch["pfc"] = {"classes": [3]}
    if draw(st.booleans()):
        switch["forwarding"] = "cut_through"
    doc = {
        "duration": draw(st.sampled_from(["10us", "200us", "1ms", "2ms"])),
        "seed": draw(st.integers(0, 2**64 - 1)),
        "network": {"switch": switch},
        "topology": topology,
        "tcp": draw(tcp_settings()),
        "traffic": draw(st.lists(traffic_entries(hosts), min_size=1, max_size=4)),
        "stats": {"queue_sample_interval": draw(st.sampled_from(["0s", "1us", "10us"])),
                  "throughput_interval": draw(st.sampled_from(["0s", "1us", "100us"]))},
    }
    if draw(st.booleans()):
        doc["drain_limit"] = draw(st.sampled_from(["1ms", "100ms"]))
    links = _failable_links(topology, hosts)
    if links and draw(st.booleans()):
        # A link or node down (routing reacting after `detect`, or hop by hop
        # with `per_hop`, or per node), or impaired (a lower rate, below every generated
        # link rate, or random loss).
        change = st.sampled_from([{"detect": "0s"}, {"detect": "10us"}, {"detect": "1ms"},
                                  {"detect": "10us", "per_hop": "5us"},
                                  {"detect": "10us", "per_node": {"spine0": "20us"}},
                                  {"rate": "500Mbps"}, {"loss": 0.2}, {"rate": "100Mbps", "loss": 0.01}])
        doc["failures"] = [
            {**draw(st.sampled_from([{"between": list(link)} for link in links] + [{"node": links[-1][1]}])),
             "at": draw(st.sampled_from(["0s", "5us", "100us"])),
             **draw(change),
             **({"until": "150us"} if draw(st.booleans()) else {})}
            for _ in range(draw(st.integers(1, 2)))
        ]
    return doc


def _failable_links(topology, hosts):
    """(a, b) pairs of links of the generated topology: host links and, on a
    leaf-spine, a fabric link."""
    if topology["kind"] == "star":
        return [(h, "sw0") for h in hosts]
    if topology["kind"] == "leaf_spine":
        per_leaf = topology["hosts_per_leaf"]
        return [(h, f"leaf{i // per_leaf}") for i, h in enumerate(hosts)] + [("leaf0", "spine0")]
    return []


class _CaseTimeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds):
    """Raise :class:`_CaseTimeout` in this (main) thread after ``seconds``: the
    core looks for signals about every million events, so even a run stuck at
    one simulated time is stopped (the stall guard would fail it first)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise _CaseTimeout(f"the case took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _check_one(doc):
    with _time_limit(CASE_LIMIT_S):
        _run_one(doc)


def _run_one(doc):
    started = time.perf_counter()
    try:
        scenario = fabricsim.from_dict(doc)
        resolved = scenario.to_resolved()
    except ScenarioError as exc:
        assert all(issue.path for issue in exc.issues), str(exc)
        return
    core = pytest.importorskip("fabricsim._core")
    try:
        sim = core.Simulation(json.dumps(resolved, allow_nan=False))
    except core.ConfigError as exc:
        path = str(exc).partition(": ")[0]
        assert path and " " not in path and "invalid scenario" not in str(exc), str(exc)
        return
    # Step in slices of simulated time, watching the wall clock: a run that
    # neither ends nor errors within the limit fails the case.
    step = max(sim.end_ps // 50, 1)
    target = 0
    while not sim.run_until(target := max(target, sim.now_ps) + step):
        assert time.perf_counter() - started < CASE_LIMIT_S, f"still running at {sim.now_ps} ps: {doc}"
    summary = sim.finish()["summary"]
    assert summary["conservation_ok"] and summary["buffer_accounting_ok"], (summary, doc)
    assert summary["sim_time_ps"] >= 0
    if summary["drained"]:
        assert summary["buffer_bytes_in_use"] == 0


_COMMON = dict(
    deadline=timedelta(seconds=CASE_LIMIT_S),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


@settings(max_examples=30, derandomize=True, **_COMMON)
@given(scenarios())
def test_generated_scenarios_are_refused_or_run_to_their_end(doc):
    _check_one(doc)


@pytest.mark.slow
@settings(max_examples=600, **_COMMON)
@given(scenarios())
def test_many_generated_scenarios_are_refused_or_run_to_their_end(doc):
    _check_one(doc)
