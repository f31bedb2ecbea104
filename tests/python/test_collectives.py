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


def _all_to_all_reference(hosts: list[str], size: int, channels: int, iterations: int, compute: int, start: int):
    """The all-to-all of docs/models/collectives.md flow by flow: per iteration, channel and rank r, a flow to
    each peer r + 1 .. r + n - 1 (mod n) of size / n split over the channels, after every flow rank r sent or
    received in the iteration before (``compute`` later)."""
    n = len(hosts)

    def part(total: int, parts: int, i: int) -> int:
        return total // parts + (1 if i < total % parts else 0)

    flows, meta, boundary = [], [], [[] for _ in range(n)]
    for k in range(iterations):
        ends: list[list[int]] = [[] for _ in range(n)]
        for c in range(channels):
            for r in range(n):
                for offset in range(1, n):
                    p = (r + offset) % n
                    f = {"src": hosts[r], "dst": hosts[p], "bytes": part(part(size, n, p), channels, c),
                         "start_ps": start}
                    if boundary[r]:
                        f["after"] = list(boundary[r])
                        if k and compute:
                            f["compute_ps"] = compute
                    ends[r].append(len(flows))
                    ends[p].append(len(flows))
                    flows.append(f)
                    meta.append((k, r, p))
        boundary = [sorted(e) for e in ends]
    return flows, meta


@pytest.mark.parametrize("channels, iterations, compute", [(1, 1, 0), (3, 2, 10_000_000), (2, 3, 0)])
def test_all_to_all_expansion_is_the_reference_flow_by_flow(channels, iterations, compute):
    hosts = [f"h{i}" for i in range(8)]
    entry = _scenario([_collective(algorithm="all_to_all", size=1_000_003, channels=channels, iterations=iterations,
                                   compute=f"{compute}ps", start="3us")]).traffic[0]
    flows, meta = expand(entry)
    assert (flows, meta) == _all_to_all_reference(hosts, 1_000_003, channels, iterations, compute, 3_000_000)
    # the same key order as the reference: the resolved JSON's bytes
    assert [list(f) for f in flows] == [list(f) for f in _all_to_all_reference(
        hosts, 1_000_003, channels, iterations, compute, 3_000_000)[0]]


@pytest.mark.parametrize("algorithm, schedule, extra", [
    ("all_to_all", "ring", {}), ("all_reduce", "ring", {}), ("reduce_scatter", "ring", {}),
    ("all_gather", "ring", {}), ("all_reduce", "halving_doubling", {}), ("all_gather", "halving_doubling", {}),
    ("all_reduce", "tree", {"chunk_size": "100KB"}),
])
def test_flow_ranks_are_the_expansions_iterations_and_ranks(algorithm, schedule, extra):
    from fabricsim.workloads.collectives import flow_ranks

    entry = _scenario([_collective(algorithm=algorithm, schedule=schedule, size="1MB", channels=2, iterations=3,
                                   **extra)]).traffic[0]
    _, meta = expand(entry)
    ks, srcs, dsts = flow_ranks(entry)
    assert list(zip(ks.tolist(), srcs.tolist(), dsts.tolist())) == meta


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
    assert table["transport"].unique().to_list() == ["tcp"]
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


# ------------------------------------------------------------ tree all-reduce


def _tree(n: int, **fields: Any) -> Any:
    hosts = ", ".join(f"h{i}" for i in range(n))
    extra = "".join(f", {k}: {v}" for k, v in fields.items())
    return fabricsim.loads(f"duration: 1ms\ntopology: {{kind: star, hosts: {n}, link: {{rate: 100Gbps, delay: 1us}}}}\n"
                           f"traffic: [{{kind: collective, schedule: tree, hosts: [{hosts}]{extra}}}]\n").traffic[0]


def test_double_binary_tree_is_nccls():
    """NCCL's trees (src/graph/trees.cc): the binary tree rooted at 0 and, for an
    even n, its mirror image (roots 0 and n-1); for an odd n, the tree shifted by
    one rank (roots 0 and 1). The pictures in NCCL's comments, as parents."""
    from fabricsim.workloads.collectives import binary_tree, double_binary_tree, tree_children, tree_depths

    #                     0   1  2  3  4  5  6  7  8  9  10  11  12  13
    assert binary_tree(14) == [-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12]
    first, second = double_binary_tree(12)
    assert first == [-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 8, 10]
    assert second == [1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1]
    first, second = double_binary_tree(13)
    assert first == [-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8]
    assert second == [9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11]
    for n in range(2, 65):
        trees = double_binary_tree(n)
        for parent in trees:
            children = tree_children(parent)
            assert parent.count(-1) == 1 and all(len(c) <= 2 for c in children)
            assert max(tree_depths(parent)) == (n - 1).bit_length()  # every rank reaches the root
        if n % 2 == 0:  # every rank is a leaf in one tree and has children in the other
            leaves = [[not c for c in tree_children(parent)] for parent in trees]
            assert all(leaves[0][r] != leaves[1][r] for r in range(n)), n


def test_tree_moves_each_trees_half_over_every_edge_both_ways():
    """Per tree (S/2 of a channel's S/C) every edge carries the tree's data up
    (reduce) and down (broadcast) in chunks of at most chunk_size: a rank sends
    and receives S/2 per tree edge it has. On 8 ranks that is S for the two
    roots' ranks (0 and 7: one edge in each tree) and 2S for the others (three
    edges in the tree where they are interior, one where they are a leaf); all
    ranks together move 2(n-1) x S, as many bytes as the ring."""
    from fabricsim.workloads.collectives import double_binary_tree

    entry = _tree(8, size=64_000_000, iterations=2)
    flows, meta = expand(entry)
    assert len(flows) == entry.flows_per_iteration() * 2 == 2 * 2 * 2 * 7 * 62  # 512 KiB chunks: 62 per tree
    for k in range(2):
        sent, received = [0] * 8, [0] * 8
        for f, (it, src, dst) in zip(flows, meta):
            if it == k:
                sent[src] += f["bytes"]
                received[dst] += f["bytes"]
        assert sent == received == [64_000_000] + [128_000_000] * 6 + [64_000_000]
    # Odd sizes, channels and an odd rank count: exact bytes per tree edge, chunks at most chunk_size.
    entry = _tree(13, size=10_000_003, channels=3, chunk_size="100KB")
    flows, meta = expand(entry)
    assert len(flows) == entry.flows_per_iteration()
    assert max(f["bytes"] for f in flows) <= 100_000
    parts = entry.tree_parts()
    assert [p[0] for p in parts] == [1_666_668, 1_666_667, 1_666_667, 1_666_667, 1_666_667, 1_666_667]
    degree = [[(p >= 0) + parent.count(r) for r, p in enumerate(parent)] for parent in double_binary_tree(13)]
    want = [sum(data * degree[i % 2][r] for i, (data, _) in enumerate(parts)) for r in range(13)]
    sent, received = [0] * 13, [0] * 13
    for f, (_, src, dst) in zip(flows, meta):
        sent[src] += f["bytes"]
        received[dst] += f["bytes"]
    assert sent == received == want
    assert sum(sent) == 2 * 12 * 10_000_003


def test_tree_chunks_wait_for_their_data_and_the_chunk_before_on_the_edge():
    """4 ranks, 2 chunks per tree. Tree 0 is 0 - 2 - {1, 3}: chunk 0 goes up
    1 -> 2, 3 -> 2 (flows 0, 1), 2 -> 0 once both have arrived (2), down 0 -> 2
    (3), 2 -> 1 and 2 -> 3 (4, 5); tree 1 (3 - 1 - {0, 2}) is flows 6-11, then
    chunk 1 of both."""
    entry = _tree(4, size=8000, chunk_size=2000, iterations=2, compute="5us")
    flows, meta = expand(entry)
    assert [m[1:] for m in meta[:6]] == [(1, 2), (3, 2), (2, 0), (0, 2), (2, 1), (2, 3)]
    assert [m[1:] for m in meta[6:12]] == [(0, 1), (2, 1), (1, 3), (3, 1), (1, 0), (1, 2)]
    assert [f.get("after") for f in flows[:6]] == [None, None, [0, 1], [2], [3], [3]]
    # chunk 1: the reduce at rank 2 waits for its children's chunk 1 and its own chunk 0 to the root (flow 2);
    # the root broadcasts chunk 1 once it has it (flow 14) and its chunk 0 to rank 2 has arrived (3)
    assert [flows[j]["after"] for j in range(12, 18)] == [[0], [1], [2, 12, 13], [3, 14], [4, 15], [5, 15]]
    # Iteration 1: a leaf waits for its own part of iteration 0 and for the part in its tree of every rank on its
    # way to the root, plus compute; the ranks above it follow their data. A rank is done with a tree once its
    # last chunk has gone down to its children, a leaf once it has come down to it. Rank 1: the last chunk from
    # 2 in tree 0 (flow 16), to 0 and 2 in tree 1 (22, 23); in tree 0, rank 2's to 1 and 3 (16, 17), the root's (15).
    assert flows[24]["after"] == [15, 16, 17, 22, 23] and flows[24]["compute_ps"] == 5_000_000
    assert flows[26]["after"] == [24, 25] and "compute_ps" not in flows[26]
    # Acyclic: every flow waits only for flows before it; the longest chain is m + 2 depth - 1 flows
    # (the deepest leaf's m chunks, then the last one up depth - 1 edges and down depth edges).
    for size, n, m in ((8000, 4, 2), (64_000, 13, 16), (64_000, 8, 16)):
        flows, _ = expand(_tree(n, size=size, chunk_size=2000))
        chain: list[int] = []
        for j, f in enumerate(flows):
            assert all(d < j for d in f.get("after", []))
            chain.append(1 + max((chain[d] for d in f.get("after", [])), default=0))
        assert max(chain) == m + 2 * (n - 1).bit_length() - 1


@pytest.mark.parametrize("fields, path, message", [
    ({"algorithm": "reduce_scatter"}, "traffic[0].schedule",
     "tree applies to all_reduce only; reduce_scatter takes ring or halving_doubling"),
    ({"algorithm": "all_gather"}, "traffic[0].schedule",
     "tree applies to all_reduce only; all_gather takes ring or halving_doubling"),
    ({"algorithm": "all_to_all"}, "traffic[0].schedule", "tree applies to all_reduce only; all_to_all takes ring"),
    ({"schedule": "ring", "chunk_size": "128KiB"}, "traffic[0].chunk_size",
     "applies to schedule tree only (schedule is ring)"),
    ({"schedule": "binomial"}, "traffic[0].schedule", "allowed: ring, halving_doubling, tree"),
    ({"size": 3, "channels": 2}, "traffic[0].size", "must be at least 2 x channels = 4 B"),
    ({"chunk_size": 0}, "traffic[0].chunk_size", ""),
    ({"size": "1GB", "chunk_size": 64}, "traffic[0].chunk_size",
     "218,750,000 flows per iteration (7,812,500 chunks per tree); at most 4,194,304 in all"),
    ({"size": "1GB", "chunk_size": "1MB", "iterations": 1000}, "traffic[0].iterations",
     "14,000,000 flows in all; at most 4,194,304"),
])
def test_tree_is_refused_where_it_does_not_apply(fields, path, message):
    with pytest.raises(ScenarioError) as info:
        _scenario([_collective(**{"schedule": "tree", **fields})])
    (got_path, got_message), = _issues(info)
    assert got_path == path and message in got_message, _issues(info)


def test_tree_iterations_run_and_no_flow_starts_before_its_dependencies(core):
    sc = _scenario([_collective(schedule="tree", size="2MB", chunk_size="128KiB", channels=2, iterations=2,
                                compute="20us")])
    result = fabricsim.run(sc)
    assert result.summary["conservation_ok"] is True
    flows = result.flows.sort("flow_id")
    start, fct = flows["start_ps"].to_list(), flows["fct_ps"].to_list()
    spec = sc.to_resolved()["traffic"][0]["flows"]
    assert len(spec) == len(start) == sc.traffic[0].flows_per_iteration() * 2 and all(f is not None for f in fct)
    for j, f in enumerate(spec):
        ready = max((start[d] + fct[d] for d in f.get("after", [])), default=0)
        assert start[j] == ready + f.get("compute_ps", 0)
    rows = result.collectives.sort("iteration").to_dicts()
    assert [r["completed"] for r in rows] == [True, True] and rows[0]["channels"] == 2
    # the second iteration starts with the leaves, 20 us after their part (and their path's) is done
    assert rows[1]["start_ps"] >= rows[0]["start_ps"] + 20_000_000


def _tree_chunk_ps(chunk: int, tcp: Any, delay_ps: int) -> float:
    """One chunk over one tree edge with nothing else on its links: the
    handshake, the chunk's frames, the last frame's path (store and forward at
    the switch)."""
    mss = tcp.mtu - tcp.header
    per_frame = tcp.header + tcp.l2_header + 20  # + preamble, start delimiter, inter-frame gap
    segments = math.ceil(chunk / mss)
    small = max(tcp.header + tcp.l2_header, tcp.min_frame) + 20
    ser = lambda wire: wire * 8 / RATE * 1e12  # noqa: E731
    handshake = 2 * (2 * delay_ps + SWITCH_PS + 2 * ser(small))
    last_frame = 2 * delay_ps + SWITCH_PS + ser(chunk - (segments - 1) * mss + per_frame)
    return handshake + ser(chunk + segments * per_frame) + last_frame


@pytest.mark.parametrize("n", [8, 13])
def test_tree_all_reduce_matches_the_pipeline_closed_form_within_one_percent(core, n):
    """The pipeline: the deepest leaf's m chunks go up one after another, and
    the last one climbs depth - 1 more edges and comes down depth edges, each
    flow opening when the one before it has arrived, so the time is (m + 2
    depth - 1) chunk times, one chunk time being the handshake, the chunk's
    serialization and the last frame's path. On long links (10 us) with small
    chunks (2 KiB), the chunk time is latency; the other flows that share a
    NIC or a switch port in the same chunk time add a few chunk serializations
    (0.28 % of a chunk time each) at most. The closed form is a lower bound (no
    flow is faster than alone); a chain one flow longer or shorter would be
    4.3-4.8 % off."""
    from fabricsim.workloads.collectives import double_binary_tree, tree_depths

    delay = 10_000_000
    hosts = "[" + ",".join(f"h{i}" for i in range(n)) + "]"
    sc = fabricsim.load(ROOT / "scenarios" / "allreduce-ring.yaml", overrides=[
        "traffic.0.iterations=1", "traffic.0.schedule=tree", "traffic.0.size=64KB", "traffic.0.chunk_size=2KiB",
        f"topology.hosts={n}", f"traffic.0.hosts={hosts}", f"topology.link.delay={delay}ps"])
    entry = sc.traffic[0]
    row = fabricsim.run(sc).collectives.row(0, named=True)
    (data, m), _ = entry.tree_parts()
    depth = max(tree_depths(double_binary_tree(n)[0]))
    assert (m, depth) == (16, 3 if n == 8 else 4)
    chunks = [data // m + (1 if i < data % m else 0) for i in range(m)]
    predicted = sum(_tree_chunk_ps(c, sc.tcp, delay) for c in chunks) + (2 * depth - 1) * _tree_chunk_ps(
        chunks[-1], sc.tcp, delay)
    assert row["completed"] and row["flows"] == 2 * 2 * (n - 1) * m
    assert 0 <= (row["time_ps"] - predicted) / predicted < 0.01, (row["time_ps"], predicted)
    assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 2 * (n - 1) / n)


def test_tree_all_reduce_of_the_shipped_scenario_is_above_its_bandwidth_bound(core):
    """64 MB on 8 ranks in 512 KiB chunks: the NICs of ranks 1-6 send 2S (the
    ring: 2(n-1)/n x S), so the time is at least their frames' serialization;
    one chunk in flight per edge, and chunks of several senders meeting at a
    switch port, keep it above."""
    n, size = 8, 64_000_000
    sc = fabricsim.load(ROOT / "scenarios" / "allreduce-ring.yaml",
                        overrides=["traffic.0.iterations=1", "traffic.0.schedule=tree"])
    result = fabricsim.run(sc)
    row = result.collectives.row(0, named=True)
    tcp = sc.tcp
    mss, per_frame = tcp.mtu - tcp.header, tcp.header + tcp.l2_header + 20
    flows = result.flows
    busiest = max(
        sum(b + math.ceil(b / mss) * per_frame for b in flows.filter(flows["src"] == f"h{r}")["size_bytes"].to_list())
        for r in range(n))
    bound = busiest * 8 / RATE * 1e12
    assert busiest > 2 * size and row["completed"] and result.summary["conservation_ok"]
    assert bound < row["time_ps"] < 2 * bound, (row["time_ps"], bound)


# ------------------------------------------------------------ over RoCEv2


def test_a_roce_collective_resolves_to_rdma_transfers_and_tcp_stays_the_default():
    tcp = _scenario([_collective(iterations=2, compute="5us")]).to_resolved()["traffic"][0]
    roce = _scenario([_collective(iterations=2, compute="5us", transport="roce")]).to_resolved()["traffic"][0]
    assert tcp["kind"] == "tcp_flows" and tcp["class"] == 0
    assert roce == {"kind": "rdma_flows", "name": "c", "flows": tcp["flows"], "class": 3, "roce": None}
    given = _scenario([_collective(transport="roce", roce={"mtu": 4096}, **{"class": 5})]).to_resolved()["traffic"][0]
    assert given["class"] == 5 and given["roce"]["mtu_bytes"] == 4096
    # The resolved scenario written with a run loads back to the same resolution.
    sc = _scenario([_collective(transport="roce")])
    assert fabricsim.loads(sc.to_yaml()).to_resolved() == sc.to_resolved()


@pytest.mark.parametrize("fields, path, message", [
    ({"transport": "udp"}, "traffic[0].transport", "tcp, roce"),
    ({"transport": "roce", "tcp": {"mtu": 9000}}, "traffic[0].tcp", "applies to transport tcp"),
    ({"roce": {"mtu": 4096}}, "traffic[0].roce", "applies to transport roce (transport is tcp)"),
    ({"transport": "roce", "roce": {"recovery": "tahoe"}}, "traffic[0].roce.recovery", "go_back_n"),
])
def test_the_transport_of_a_collective_is_checked(fields, path, message):
    with pytest.raises(ScenarioError) as info:
        _scenario([_collective(**fields)])
    (got_path, got_message), = _issues(info)
    assert got_path == path and message in got_message, _issues(info)


def _rdma_flows(flows: list[dict[str, Any]]) -> fabricsim.Scenario:
    return _scenario([{"kind": "rdma_flows", "name": "list", "flows": flows}], hosts=3)


@pytest.mark.parametrize(
    "after, path, message",
    [
        ([5], "traffic[0].flows[1].after[0]", "no flow 5"),
        (["nope"], "traffic[0].flows[1].after[0]", "unknown flow 'nope'"),
        ([1], "traffic[0].flows[1].after[0]", "cannot wait for itself"),
        ([2], "traffic[0].flows[1].after", "dependency cycle: flow 1 waits for 2 waits for 1"),
    ],
)
def test_rdma_transfer_dependencies_are_checked_as_tcp_flows_are(after, path, message):
    with pytest.raises(ScenarioError) as info:
        _rdma_flows([
            {"src": "h0", "dst": "h1", "size": "1MB"},
            {"src": "h1", "dst": "h2", "size": "1MB", "after": after},
            {"src": "h2", "dst": "h0", "size": "1MB", "after": [1]},
        ])
    (got_path, got_message), = _issues(info)
    assert got_path == path and message in got_message, _issues(info)


def test_bad_rdma_transfers_are_refused_with_the_field(core):
    with pytest.raises(ScenarioError) as info:
        _rdma_flows([{"src": "h0", "dst": "h1", "size": "1MB", "compute": "1us"}])
    assert _issues(info)[0][0] == "traffic[0].flows[0].compute"
    with pytest.raises(ScenarioError) as info:
        _rdma_flows([])
    assert _issues(info)[0][0] == "traffic[0].flows"
    for flow, path in (({"src": "h0", "dst": "h9", "size": "1MB"}, "traffic[0].flows[0].dst"),
                       ({"src": "h1", "dst": "h1", "size": "1MB"}, "traffic[0].flows[0]")):
        with pytest.raises(fabricsim.FabricsimError) as error:
            fabricsim.run(_rdma_flows([flow]))
        assert path in str(error.value), str(error.value)


def test_rdma_transfers_wait_for_their_dependencies_to_reach_the_responder(core):
    sc = _rdma_flows([
        {"name": "first", "src": "h0", "dst": "h1", "size": "1MB"},
        {"src": "h1", "dst": "h2", "size": "500KB", "after": ["first"], "compute": "5us"},
        {"src": "h2", "dst": "h0", "size": "200KB", "after": [0, 1]},
    ])
    result = fabricsim.run(sc)
    flows = result.flows.sort("flow_id")
    start, fct, end = flows["start_ps"].to_list(), flows["fct_ps"].to_list(), flows["end_ps"].to_list()
    assert flows["kind"].to_list() == ["rdma"] * 3 and result.summary["rdma_qps_completed"] == 3
    assert start[1] == start[0] + fct[0] + 5_000_000
    assert start[2] == max(start[0] + fct[0], start[1] + fct[1])
    # The last data packet reaches the responder, then its ACK the requester (the flow's last delivery).
    assert all(e > s + f for s, f, e in zip(start, fct, end))
    assert result.summary["conservation_ok"] is True


@pytest.mark.parametrize("algorithm, schedule", [
    ("all_reduce", "ring"), ("reduce_scatter", "ring"), ("all_gather", "ring"), ("all_to_all", "ring"),
    ("all_reduce", "halving_doubling"), ("all_gather", "halving_doubling"), ("all_reduce", "tree"),
])
def test_every_algorithm_runs_over_roce_its_transfers_waiting_for_their_dependencies(core, algorithm, schedule):
    fields = {"chunk_size": "128KiB"} if schedule == "tree" else {}
    sc = _scenario([_collective(algorithm=algorithm, schedule=schedule, size="1MB", channels=2, iterations=2,
                                compute="20us", transport="roce", **fields)])
    result = fabricsim.run(sc)
    assert result.summary["conservation_ok"] is True and result.summary["rdma_retransmits"] == 0
    flows = result.flows.sort("flow_id")
    start, fct = flows["start_ps"].to_list(), flows["fct_ps"].to_list()
    spec = sc.to_resolved()["traffic"][0]["flows"]
    assert len(spec) == len(start) == sc.traffic[0].flows_per_iteration() * 2 and all(f is not None for f in fct)
    assert set(flows["kind"].to_list()) == {"rdma"} and set(flows["class"].to_list()) == {3}
    waited = 0
    for j, f in enumerate(spec):
        if "after" not in f:
            assert start[j] == f["start_ps"]
            continue
        ready = max(start[d] + fct[d] for d in f["after"])
        assert start[j] == ready + f.get("compute_ps", 0)
        waited += 1
    assert waited > len(spec) // 3
    rows = result.collectives.sort("iteration").to_dicts()
    assert {r["transport"] for r in rows} == {"roce"}
    assert [r["completed"] for r in rows] == [True, True]
    assert rows[1]["start_ps"] >= rows[0]["start_ps"] + 20_000_000
    assert rows[0]["busbw_gbps"] == pytest.approx(rows[0]["algbw_gbps"] * bus_factor(algorithm, 8))
    # The same scenario and seed again: the same tables.
    again = fabricsim.run(sc)
    assert again.flows.sort("flow_id").equals(flows) and again.collectives.equals(result.collectives)
    assert again.summary == result.summary


def _roce_step_ps(chunk: int, mtu: int = 1024, header: int = 62) -> float:
    """One step of a ring (or pairwise exchange) over RoCE on an uncongested
    star (docs/models/collectives.md): the rank's uplink carries its chunk's
    data frames and one ACK frame (BTH + AETH, 66 B) for each data packet of
    the stream it receives, at line rate; then the last data frame's path. No
    handshake: a queue pair is connected before the collective."""
    packets = math.ceil(chunk / mtu)
    per_frame = header + 20  # + preamble, start delimiter, inter-frame gap
    ack = max(header + 4, 64) + 20
    ser = lambda wire: wire * 8 / RATE * 1e12  # noqa: E731
    last_frame = 2 * DELAY_PS + SWITCH_PS + ser(chunk - (packets - 1) * mtu + per_frame)
    return ser(chunk + packets * per_frame + packets * ack) + last_frame


def test_ring_all_reduce_over_roce_matches_its_closed_form_within_one_percent(core):
    n, size = 8, 64_000_000
    sc = fabricsim.load(ROOT / "scenarios" / "allreduce-ring.yaml",
                        overrides=["traffic.0.iterations=1", "traffic.0.transport=roce"])
    result = fabricsim.run(sc)
    row = result.collectives.row(0, named=True)
    predicted = 2 * (n - 1) * _roce_step_ps(size // n)
    assert row["completed"] and row["ranks"] == n and row["flows"] == n * 2 * (n - 1)
    assert abs(row["time_ps"] - predicted) / predicted < 0.01, (row["time_ps"], predicted)
    assert result.summary["rdma_retransmits"] == 0 and result.summary["rdma_cnps"] == 0
    assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 2 * (n - 1) / n)
    # The bandwidth term alone, 2(n-1)/n x S/B, is 8.96 ms; the frames' headers and the ACKs add 16 %.
    bandwidth_term = 2 * (n - 1) / n * size * 8 / RATE * 1e12
    assert 1.15 < row["time_ps"] / bandwidth_term < 1.18


def test_halving_doubling_all_reduce_over_roce_matches_its_closed_form_within_one_percent(core):
    from fabricsim.workloads.collectives import halving_doubling_steps

    n, size = 8, 64_000_000
    sc = fabricsim.load(ROOT / "scenarios" / "allreduce-ring.yaml", overrides=[
        "traffic.0.iterations=1", "traffic.0.transport=roce", "traffic.0.schedule=halving_doubling"])
    row = fabricsim.run(sc).collectives.row(0, named=True)
    predicted = sum(_roce_step_ps(step[0][1]) for step in halving_doubling_steps("all_reduce", n, size))
    assert row["completed"] and row["flows"] == n * 6
    assert abs(row["time_ps"] - predicted) / predicted < 0.01, (row["time_ps"], predicted)


def test_a_repeated_all_to_all_too_large_to_build_is_refused_with_its_estimate():
    """Each flow of a later iteration waits for its rank's 2 (n - 1) flows of the one before: at 1,024
    ranks two iterations are 2.1 billion dependencies, refused when loaded (naming `iterations`, with the
    estimate); 256 ranks may run three."""
    def text(ranks: int, iterations: int) -> str:
        hosts = ", ".join(f"h{i}" for i in range(ranks))
        return f"""
duration: 1ms
topology: {{kind: fat_tree, k: 16, link: {{rate: 400Gbps, delay: 1us}}}}
traffic:
  - {{kind: collective, name: a2a, algorithm: all_to_all, hosts: [{hosts}], size: 16MB, iterations: {iterations}}}
"""
    with pytest.raises(ScenarioError) as err:
        fabricsim.loads(text(1024, 2))
    assert err.value.issues[0].path == "traffic[0].iterations"
    assert "2,143,291,392 dependencies" in str(err.value) and "GiB" in str(err.value)
    fabricsim.loads(text(1024, 1))
    fabricsim.loads(text(256, 3))


def test_the_1024_gpu_all_to_all_scenario_is_valid_and_runs_at_a_small_size(core):
    """scenarios/scale/ai-alltoall-1024gpu.yaml: 1,024 ranks on a k=16 fat-tree, one RDMA transfer per pair
    (1,047,552). Its full run is measured in BENCHMARKS.md; here the same settings on a k=4 fat-tree with
    its 16 hosts: every queue pair completes, and conservation and buffer accounting hold."""
    path = ROOT / "scenarios" / "scale" / "ai-alltoall-1024gpu.yaml"
    scenario = fabricsim.load(path)
    (entry,) = scenario.traffic
    assert (scenario.topology.k, len(entry.hosts), entry.transport) == (16, 1024, "roce")
    assert entry.flows_per_iteration() == 1024 * 1023
    small = fabricsim.load(path, overrides=["topology.k=4", "traffic.0.hosts=[" + ", ".join(f"h{i}" for i in range(16))
                                            + "]", "traffic.0.size=1MB"])
    s = fabricsim.run(small).summary
    assert s["conservation_ok"] and s["buffer_accounting_ok"]
    assert s["rdma_qps"] == s["rdma_qps_completed"] == 240 and s["packets_dropped"] == 0
