"""Collective traffic and flow dependencies: the expansion of ``kind: collective``
into dependent TCP flows, the ``collectives`` table, the dependency checks of
explicit flow lists, and ring all-reduce against its closed form
(docs/models/collectives.md, "Validation")."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import fabricsim
from fabricsim import ScenarioError, from_dict
from fabricsim.workloads.collectives import bus_factor, expand

ROOT = Path(__file__).resolve().parents[2]

RATE = 100e9
DELAY_PS = 1_000_000
SWITCH_PS = 500_000


def _scenario(traffic: list[dict[str, Any]], hosts: int = 8, **extra: Any) -> fabricsim.Scenario:
    return from_dict({
        "duration": "50ms",
        "network": {"switch": {"latency": f"{SWITCH_PS}ps", "buffer": {"model": "static", "port_size": "64MB"}}},
        "topology": {"kind": "star", "hosts": hosts, "link": {"rate": "100Gbps", "delay": f"{DELAY_PS}ps"}},
        "tcp": {"profile": "rfc", "cc": "newreno", "init_cwnd": 100000, "rwnd": "256MB"},
        "traffic": traffic,
        **extra,
    })


def _collective(**fields: Any) -> dict[str, Any]:
    return {"kind": "collective", "name": "c", "hosts": [f"h{i}" for i in range(8)], "size": "8MB", **fields}


def _issues(exc: pytest.ExceptionInfo[ScenarioError]) -> list[tuple[str, str]]:
    return [(i.path, i.message) for i in exc.value.issues]


# ------------------------------------------------------------------ expansion


@pytest.mark.parametrize(
    "algorithm, steps", [("all_reduce", 14), ("reduce_scatter", 7), ("all_gather", 7), ("all_to_all", 1)]
)
def test_expansion_has_the_steps_and_bytes_of_the_algorithm(algorithm, steps):
    sc = _scenario([_collective(algorithm=algorithm, size=8_000_003, channels=2, iterations=3)])
    entry = sc.traffic[0]
    flows, meta = expand(entry)
    per_step = 8 * 7 if algorithm == "all_to_all" else 8
    assert len(flows) == per_step * steps * 2 * 3 == entry.flows_per_iteration() * 3
    # Every rank sends size/n per step (all-to-all: size/n to each peer), split exactly over the channels.
    for k in range(3):
        sent = [0] * 8
        for f, (it, src, _) in zip(flows, meta):
            if it == k:
                sent[src] += f["bytes"]
        want = 8_000_003 * (7 if algorithm == "all_to_all" else steps) / 8
        assert all(abs(s - want) <= steps * 2 for s in sent), (sent, want)
    # Only the first iteration's flows start without waiting; later ones wait for the rank's previous part.
    first = [f for f, m in zip(flows, meta) if m[0] == 0 and "after" not in f]
    assert len(first) == per_step * 2
    assert all(f.get("compute_ps", 0) == 0 for f in flows)


def test_ring_steps_wait_for_the_ranks_send_and_receive_of_the_step_before():
    flows, meta = expand(_scenario([_collective(compute="10us", iterations=2)]).traffic[0])
    # Step 1 of rank 3: its own step-0 send (flow 3) and the step-0 send of rank 2 to it (flow 2).
    assert flows[8 + 3]["after"] == [2, 3]
    # Iteration 1, step 0 of rank 0: the last step of iteration 0 (flows 104..111), its send and receive.
    assert flows[112]["after"] == [104, 111] and flows[112]["compute_ps"] == 10_000_000


def test_bus_bandwidth_factors_are_nccls():
    assert bus_factor("all_reduce", 8) == 2 * 7 / 8
    for algorithm in ("reduce_scatter", "all_gather", "all_to_all"):
        assert bus_factor(algorithm, 4) == 3 / 4


def test_collective_fields_are_checked():
    with pytest.raises(ScenarioError) as info:
        _scenario([_collective(hosts=["h0"])])
    assert _issues(info)[0][0] == "traffic[0].hosts"
    with pytest.raises(ScenarioError) as info:
        _scenario([_collective(hosts=["h0", "h1", "h0"])])
    assert _issues(info)[0][0] == "traffic[0].hosts[2]"
    with pytest.raises(ScenarioError) as info:
        _scenario([_collective(size=15, channels=2)])
    assert _issues(info)[0][0] == "traffic[0].size"
    with pytest.raises(ScenarioError) as info:
        _scenario([_collective(algorithm="ring")])
    assert _issues(info)[0][0] == "traffic[0].algorithm"
    with pytest.raises(ScenarioError) as info:
        _scenario([_collective(hosts=["h0", "h9"])]).to_resolved()
    assert _issues(info)[0][0] == "traffic[0].hosts[1]"


# ------------------------------------------------------------ flow dependencies


def _flows(flows: list[dict[str, Any]]) -> fabricsim.Scenario:
    return _scenario([{"kind": "tcp_flows", "name": "list", "flows": flows}], hosts=3)


def test_dependencies_by_index_and_name_resolve_to_indices():
    sc = _flows([
        {"name": "first", "src": "h0", "dst": "h1", "size": "1MB"},
        {"src": "h1", "dst": "h2", "size": "1MB", "after": ["first"], "compute": "5us"},
        {"src": "h2", "dst": "h0", "size": "1MB", "after": [0, 1]},
    ])
    flows = sc.to_resolved()["traffic"][0]["flows"]
    assert "after" not in flows[0]
    assert flows[1]["after"] == [0] and flows[1]["compute_ps"] == 5_000_000
    assert flows[2]["after"] == [0, 1] and "compute_ps" not in flows[2]


@pytest.mark.parametrize(
    "after, path, message",
    [
        ([5], "traffic[0].flows[1].after[0]", "no flow 5"),
        (["nope"], "traffic[0].flows[1].after[0]", "unknown flow 'nope'"),
        ([1], "traffic[0].flows[1].after[0]", "cannot wait for itself"),
        ([2], "traffic[0].flows[1].after", "dependency cycle: flow 1 waits for 2 waits for 1"),
    ],
)
def test_unknown_dependencies_and_cycles_are_refused_before_the_run(after, path, message):
    with pytest.raises(ScenarioError) as info:
        _flows([
            {"src": "h0", "dst": "h1", "size": "1MB"},
            {"src": "h1", "dst": "h2", "size": "1MB", "after": after},
            {"src": "h2", "dst": "h0", "size": "1MB", "after": [1]},
        ])
    (got_path, got_message), = _issues(info)
    assert got_path == path and message in got_message, _issues(info)


def test_compute_without_dependencies_is_refused():
    with pytest.raises(ScenarioError) as info:
        _flows([{"src": "h0", "dst": "h1", "size": "1MB", "compute": "1us"}])
    assert _issues(info)[0][0] == "traffic[0].flows[0].compute"


def test_no_flow_starts_before_its_dependencies_complete_and_packets_are_conserved(core):
    sc = _scenario([_collective(algorithm="all_reduce", size="2MB", channels=2, iterations=2, compute="20us"),
                    {**_collective(algorithm="all_to_all", size="1MB", iterations=2), "name": "a2a",
                     "hosts": ["h0", "h2", "h4", "h6"]}])
    result = fabricsim.run(sc)
    assert result.summary["conservation_ok"] is True
    flows = result.flows.sort("flow_id")
    start, fct, name = flows["start_ps"].to_list(), flows["fct_ps"].to_list(), flows["name"].to_list()
    assert all(f is not None and f > 0 for f in fct), "every flow completes"
    resolved = sc.to_resolved()["traffic"]
    checked = 0
    for index, entry in enumerate(resolved):
        ids = [i for i, n in enumerate(name) if n == sc.traffic[index].name]
        for j, spec in enumerate(entry["flows"]):
            if "after" not in spec:
                assert start[ids[j]] == spec["start_ps"]
                continue
            ready = max(start[ids[d]] + fct[ids[d]] for d in spec["after"])
            assert start[ids[j]] == max(ready + spec.get("compute_ps", 0), spec["start_ps"])
            checked += 1
    assert checked > 100
    table = result.collectives
    assert table.height == 4 and table["completed"].all()
    assert table.filter(table["name"] == "a2a")["flows"].to_list() == [12, 12]
    # Iteration 1 starts after iteration 0's first rank is done plus the compute time.
    rows = table.filter(table["name"] == "c").sort("iteration").to_dicts()
    assert rows[1]["start_ps"] >= rows[0]["start_ps"] + 20_000_000


# ------------------------------------------------------------ closed form


def _ring_step_ps(chunk: int, tcp: Any) -> float:
    """One ring step on an uncongested star (docs/models/collectives.md):
    handshake, the chunk's data frames and the ACK frames of the stream the
    rank receives at once on its uplink, the last frame's path."""
    mss = tcp.mtu - tcp.header
    per_frame = tcp.header + tcp.l2_header + 20  # + preamble, start delimiter, inter-frame gap
    segments = math.ceil(chunk / mss)
    data_wire = chunk + segments * per_frame
    quick = tcp.delayed_ack.quickack
    acks = min(quick, segments) + math.ceil(max(segments - quick, 0) / tcp.delayed_ack.count)
    small = max(tcp.header + tcp.l2_header, tcp.min_frame) + 20
    ser = lambda wire: wire * 8 / RATE * 1e12  # noqa: E731
    one_way_small = 2 * DELAY_PS + SWITCH_PS + 2 * ser(small)
    handshake = 2 * one_way_small
    last_frame = 2 * DELAY_PS + SWITCH_PS + ser(mss + per_frame)  # store and forward at the switch
    return handshake + ser(data_wire + acks * small) + last_frame


def test_ring_all_reduce_matches_its_closed_form_within_one_percent(core):
    n, size = 8, 64_000_000
    sc = fabricsim.load(ROOT / "scenarios" / "allreduce-ring.yaml", overrides=["traffic.0.iterations=1"])
    row = fabricsim.run(sc).collectives.row(0, named=True)
    bandwidth_term = 2 * (n - 1) / n * size * 8 / RATE * 1e12
    predicted = 2 * (n - 1) * _ring_step_ps(size // n, sc.tcp)
    assert row["completed"] and row["ranks"] == n and row["bytes"] == size
    assert abs(row["time_ps"] - predicted) / predicted < 0.01, (row["time_ps"], predicted, bandwidth_term)
    assert row["algbw_gbps"] == pytest.approx(size * 8 / row["time_ps"] * 1e12 / 1e9)
    assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 2 * (n - 1) / n)
    # The wire overheads (headers, ACKs) and latencies keep the bus bandwidth below the link's 100 Gb/s.
    assert 85 < row["busbw_gbps"] < 100


def test_halving_doubling_moves_the_rings_bytes_in_log_steps():
    """Rabenseifner: 2 log2(n) steps, partner r XOR d, the same 2(n-1)/n x S
    bytes per rank as the ring; integer halves stay exact."""
    from fabricsim.workloads.collectives import halving_doubling_steps

    n, size = 8, 64_000_003
    steps = halving_doubling_steps("all_reduce", n, size)
    assert [step[0][0] for step in steps] == [4, 2, 1, 1, 2, 4]
    for step in steps:
        assert all(step[step[r][0]][0] == r for r in range(n))  # pairwise exchanges
    per_rank = [sum(step[r][1] for step in steps) for r in range(n)]
    assert all(abs(b - 2 * (n - 1) / n * size) <= 3 for b in per_rank), per_rank
    # reduce-scatter leaves every byte with exactly one rank
    assert sum(steps[2][r][1] for r in range(n)) == size
    entry = fabricsim.loads(
        "duration: 1ms\ntopology: {kind: star, hosts: 8, link: {rate: 100Gbps, delay: 1us}}\n"
        "traffic: [{kind: collective, schedule: halving_doubling, hosts: [h0, h1, h2, h3, h4, h5, h6, h7], "
        "size: 8MB, channels: 2}]\n").traffic[0]
    flows, _ = expand(entry)
    assert len(flows) == entry.flows_per_iteration() == 8 * 6 * 2


@pytest.mark.parametrize("hosts, algorithm, message", [
    ("[h0, h1, h2]", "all_reduce", r"hosts: halving_doubling needs a power of two ranks \(got 3\)"),
    ("[h0, h1]", "all_to_all", "schedule: halving_doubling applies to all_reduce"),
])
def test_halving_doubling_is_refused_where_it_does_not_apply(hosts, algorithm, message):
    with pytest.raises(fabricsim.ScenarioError, match=message):
        fabricsim.loads("duration: 1ms\ntopology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}\n"
                        f"traffic: [{{kind: collective, algorithm: {algorithm}, schedule: halving_doubling, "
                        f"hosts: {hosts}, size: 1MB}}]\n")


def test_halving_doubling_all_reduce_matches_its_closed_form_within_one_percent(core):
    """Each step is a pairwise exchange: a rank's uplink carries its data and
    the ACKs of its partner's stream, as in a ring step, with that step's
    chunk: the time is the sum of the ring-step formula over the six chunks."""
    from fabricsim.workloads.collectives import halving_doubling_steps

    n, size = 8, 64_000_000
    sc = fabricsim.load(ROOT / "scenarios" / "allreduce-ring.yaml",
                        overrides=["traffic.0.iterations=1", "traffic.0.schedule=halving_doubling"])
    row = fabricsim.run(sc).collectives.row(0, named=True)
    predicted = sum(_ring_step_ps(step[0][1], sc.tcp) for step in halving_doubling_steps("all_reduce", n, size))
    ring = 2 * (n - 1) * _ring_step_ps(size // n, sc.tcp)
    assert row["completed"] and row["flows"] == n * 6
    assert abs(row["time_ps"] - predicted) / predicted < 0.01, (row["time_ps"], predicted)
    # the same bytes in 6 steps instead of 14: 8 fewer handshakes and last-frame latencies
    assert row["time_ps"] < ring
