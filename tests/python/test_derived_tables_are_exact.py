"""Derived tables keep their exact bits at scale: the ideal-FCT path search
(once per destination, numpy over the edge list) gives the very bits of the
original search (a reversed graph built and searched for each flow) on single-
and multi-path topologies and on a topology that holds several independent
networks; source shares do not depend on the order polars groups rows in; the
FCT bucket table counts each traffic entry's and bucket's flows, finished or not,
as the flow table lists them."""

from __future__ import annotations

from collections import deque
from itertools import permutations
from typing import Optional

import numpy as np
import polars as pl
import pytest

import fabricsim
from fabricsim.outputs.fct import _ideal_column, _Paths, ideal_fct_ps


class _ReferencePaths:
    """The original search, kept here as the reference: one BFS and one layered pass per flow."""

    def __init__(self, links: pl.DataFrame, nodes: pl.DataFrame) -> None:
        self.out: dict[str, list[tuple[str, float, float]]] = {}
        for src, dst, rate, delay in links.select("src", "dst", "rate_bps", "delay_ps").iter_rows():
            self.out.setdefault(src, []).append((dst, float(rate), float(delay)))
        self.latency = {n: float(v) for n, v in nodes.select("name", "latency_ps").iter_rows()}

    def hops(self, src: str, dst: str) -> list[tuple[float, float]]:
        reverse: dict[str, list[str]] = {}
        for a, edges in self.out.items():
            for b, _, _ in edges:
                reverse.setdefault(b, []).append(a)
        dist = {dst: 0}
        queue = deque([dst])
        while queue:
            node = queue.popleft()
            for prev in reverse.get(node, []):
                if prev not in dist:
                    dist[prev] = dist[node] + 1
                    queue.append(prev)
        if src not in dist:
            raise ValueError(f"no path from {src} to {dst}")
        best: dict[str, tuple[float, list[tuple[float, float]]]] = {dst: (float("inf"), [])}
        for node in sorted(dist, key=dist.get):  # type: ignore[arg-type]
            if node == dst or dist[node] > dist[src]:
                continue
            choice: Optional[tuple[float, list[tuple[float, float]]]] = None
            for nxt, rate, delay in self.out.get(node, []):
                if dist.get(nxt) != dist[node] - 1 or nxt not in best:
                    continue
                width, tail = best[nxt]
                candidate = (min(width, rate), [(rate, delay + self.latency.get(nxt, 0.0)), *tail])
                if choice is None or candidate[0] > choice[0]:
                    choice = candidate
            if choice is not None:
                best[node] = choice
        return best[src][1]


def _reference_ideal(size: int, forward, backward, tcp, overhead: int) -> float:
    """The original formula, with Python's ``sum`` over the hops."""
    frame = lambda payload: max(payload + tcp.header + tcp.l2_header, tcp.min_frame) + overhead  # noqa: E731
    syn = frame(0)

    def one_way(wire: int, hops) -> float:
        return sum(wire * 8e12 / rate + delay for rate, delay in hops)

    mss = tcp.mtu - tcp.header
    full, rest = divmod(max(int(size), 1), mss)
    first = frame(mss if full else rest)
    bits = full * frame(mss) * 8 + (frame(rest) * 8 if rest else 0)
    r_min = min(rate for rate, _ in forward)
    return one_way(syn, forward) + one_way(syn, backward) + bits * 1e12 / r_min + one_way(first, forward) - first * 8e12 / r_min


_NETWORK = """
network:
  switch: {latency: 600ns}
"""

_TOPOLOGIES = {
    "fat_tree_k4_ecmp": """
topology: {kind: fat_tree, k: 4, link: {rate: 10Gbps, delay: 500ns}}
""",
    "leaf_spine_parallel_links": """
topology:
  kind: leaf_spine
  leaves: 3
  spines: 2
  links_per_spine: 2
  hosts_per_leaf: [3, 2, 1]
  host_link: {rate: 10Gbps, delay: 1us}
  fabric_link: {rate: 40Gbps, delay: 700ns}
""",
    "dumbbell": """
topology:
  kind: dumbbell
  left: 3
  right: 2
  edge_link: {rate: 40Gbps, delay: 5us}
  bottleneck_link: {rate: 10Gbps, delay: 20us}
""",
    # two independent networks; the first has equal-hop paths of different
    # widths and, among the widest, of different delays (the first in link order
    # wins), and a host on two switches (reached by more than one link)
    "two_networks_unequal_paths": """
topology:
  kind: explicit
  nodes:
    - {name: a0, kind: host}
    - {name: a1, kind: host}
    - {name: a2, kind: host}
    - {name: a3, kind: host}
    - {name: s0, kind: switch}
    - {name: s1, kind: switch}
    - {name: s2, kind: switch}
    - {name: s3, kind: switch}
    - {name: s4, kind: switch}
    - {name: b0, kind: host}
    - {name: b1, kind: host}
    - {name: t0, kind: switch}
    - {name: t1, kind: switch}
  links:
    - {a: a0, b: s0, rate: 25Gbps, delay: 1us}
    - {a: s0, b: s1, rate: 10Gbps, delay: 1us}
    - {a: s0, b: s2, rate: 40Gbps, delay: 3us}
    - {a: s0, b: s4, rate: 40Gbps, delay: 2us}
    - {a: s1, b: s3, rate: 100Gbps, delay: 1us}
    - {a: s2, b: s3, rate: 40Gbps, delay: 1us}
    - {a: s4, b: s3, rate: 40Gbps, delay: 5us}
    - {a: s3, b: a1, rate: 25Gbps, delay: 1us}
    - {a: s1, b: a2, rate: 1Gbps, delay: 10us}
    - {a: s2, b: a3, rate: 10Gbps, delay: 1us}
    - {a: s4, b: a3, rate: 10Gbps, delay: 2us}
    - {a: b0, b: t0, rate: 100Gbps, delay: 100ns}
    - {a: t0, b: t1, rate: 100Gbps, delay: 100ns}
    - {a: t1, b: b1, rate: 50Gbps, delay: 100ns}
""",
}

_FIRST_PAIR = {
    "fat_tree_k4_ecmp": ("h0", "h15"),
    "leaf_spine_parallel_links": ("h0", "h5"),
    "dumbbell": ("left0", "right1"),
    "two_networks_unequal_paths": ("a0", "a1"),
}


def _run(name: str) -> fabricsim.Result:
    src, dst = _FIRST_PAIR[name]
    text = f"""
name: {name}
seed: 1
duration: 50us
{_NETWORK}
{_TOPOLOGIES[name]}
traffic:
  - {{kind: tcp_bulk, name: f0, src: {src}, dst: {dst}, size: 10KB}}
"""
    return fabricsim.run(fabricsim.loads(text))


def _networks(links: pl.DataFrame, hosts: list[str]) -> list[list[str]]:
    """The hosts of each connected part of the topology."""
    neighbours: dict[str, set[str]] = {}
    for a, b in links.select("src", "dst").iter_rows():
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    seen: set[str] = set()
    parts = []
    for host in hosts:
        if host in seen:
            continue
        part, stack = [], [host]
        seen.add(host)
        while stack:
            node = stack.pop()
            if node in hosts:
                part.append(node)
            for other in sorted(neighbours.get(node, ())):
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        parts.append(part)
    return parts


@pytest.mark.parametrize("name", sorted(_TOPOLOGIES))
def test_fast_ideal_fct_equals_the_per_flow_search_bit_for_bit(name):
    result = _run(name)
    nodes = result.nodes
    hosts = nodes.filter(pl.col("kind") == "host")["name"].to_list()
    parts = _networks(result.links, hosts)
    if name == "two_networks_unequal_paths":
        assert len(parts) == 2
    pairs = [pair for part in parts for pair in permutations(part, 2)]
    sizes = [0, 1, 100, 1447, 1448, 1449, 4000, 65_536, 1_000_000, 123_456_789, 2**40 + 3]
    rows = [(pair, size) for pair in pairs for size in sizes]
    flows = pl.DataFrame(
        {
            "name": ["f0"] * len(rows),
            "src": [src for (src, _), _ in rows],
            "dst": [dst for (_, dst), _ in rows],
            "size_bytes": pl.Series([size for _, size in rows], dtype=pl.UInt64),
        }
    )
    scenario = result.scenario
    tcp, overhead = scenario.tcp, scenario.network.ethernet_overhead
    fast = _ideal_column(flows, _Paths(result.links, nodes), {"f0": tcp}, overhead)
    reference = _ReferencePaths(result.links, nodes)
    expected = np.array(
        [_reference_ideal(size, reference.hops(src, dst), reference.hops(dst, src), tcp, overhead) for (src, dst), size in rows]
    )
    scalar = np.array(
        [ideal_fct_ps(size, reference.hops(src, dst), reference.hops(dst, src), tcp, overhead) for (src, dst), size in rows]
    )
    assert fast.view(np.int64).tolist() == expected.view(np.int64).tolist()
    assert scalar.view(np.int64).tolist() == expected.view(np.int64).tolist()


def test_widest_path_is_chosen_and_ties_go_to_the_first_link():
    result = _run("two_networks_unequal_paths")
    rate, time = _Paths(result.links, result.nodes).hops([("a0", "a1")])
    # a0 -> s0 -> {s1 (10G), s2 (40G, 3us), s4 (40G, 2us)} -> s3 -> a1: the 40G path through s2, listed first
    assert rate[0].tolist() == [25e9, 40e9, 40e9, 25e9]
    assert time[0].tolist() == [1.6e6, 3.6e6, 1.6e6, 1e6]


def test_hosts_of_different_networks_have_no_path():
    result = _run("two_networks_unequal_paths")
    with pytest.raises(ValueError, match="no path from a0 to b1"):
        _Paths(result.links, result.nodes).hops([("a0", "b1")])


def test_source_shares_are_the_same_bits_whatever_order_polars_groups_in():
    from fabricsim.outputs.shares import source_shares
    from fabricsim.outputs.tables import RunTables

    rng = np.random.default_rng(7)
    n = 200_000
    flows = pl.DataFrame(
        {
            "src": [f"h{i}" for i in rng.integers(0, 400, n)],
            "dst": [f"h{i}" for i in rng.integers(0, 40, n)],
            "bytes_delivered": pl.Series(rng.integers(1, 10**9, n), dtype=pl.UInt64),
        }
    )
    tables = [source_shares(RunTables({}, flows=flows.sample(fraction=1.0, shuffle=True, seed=s))) for s in range(4)]
    for table in tables[1:]:
        assert table["jain"].to_numpy().view(np.int64).tolist() == tables[0]["jain"].to_numpy().view(np.int64).tolist()


BUCKETS = """
name: buckets
duration: 2ms
drain_limit: 1ms
topology: {kind: star, hosts: 4, link: {rate: 10Gbps, delay: 1us}}
traffic:
- kind: tcp_flows
  name: small
  flows:
  - {src: h1, dst: h0, size: 20KB}
  - {src: h2, dst: h0, size: 50KB, start: 10us}
  - {src: h3, dst: h0, size: 300KB, start: 20us}
- kind: tcp_flows
  name: large
  flows:
  - {src: h1, dst: h2, size: 2MB}
  - {src: h3, dst: h2, size: 20MB}
  - {src: h2, dst: h1, size: 90KB, start: 5us}
"""


def _reference_buckets(flows: pl.DataFrame, labels: list[str], entries: list[str]) -> list[dict]:
    """The bucket table row by row in plain Python over the flow table's rows."""

    def higher(values: list[float], q: float) -> Optional[float]:
        return sorted(values)[int(np.ceil(q * (len(values) - 1)))] if values else None

    rows = []
    counted = [r for r in flows.iter_rows(named=True) if r["counted"]]
    for traffic in ["all", *entries]:
        for label in [*labels, "all"]:
            group = [r for r in counted if traffic in ("all", r["name"]) and label in ("all", r["bucket"])]
            done = [r for r in group if r["completed"] and r["fct_ps"] is not None]
            fct = [float(r["fct_ps"]) for r in done]
            slow = [r["slowdown"] for r in done]
            rows.append({"traffic": traffic, "bucket": label, "count": len(done), "incomplete": len(group) - len(done),
                         "mean_fct_ps": sum(fct) / len(fct) if fct else None, "median_fct_ps": higher(fct, 0.5),
                         "p99_fct_ps": higher(fct, 0.99), "mean_slowdown": sum(slow) / len(slow) if slow else None,
                         "median_slowdown": higher(slow, 0.5), "p99_slowdown": higher(slow, 0.99)})
    return rows


def test_the_bucket_table_counts_every_entry_bucket_and_unfinished_flow_as_the_flow_table_says():
    from fabricsim.outputs.fct import bucket_table, flow_table

    result = fabricsim.run(fabricsim.loads(BUCKETS))
    flows = flow_table(result)
    assert flows.filter(~pl.col("completed")).height == 1  # the 20 MB flow is cut by the drain limit
    labels = ["<=100KB", "100KB-1MB", "1MB-10MB", ">10MB"]
    expected = _reference_buckets(flows, labels, ["small", "large"])
    got = bucket_table(result).to_dicts()
    assert [(r["traffic"], r["bucket"], r["count"], r["incomplete"]) for r in got] == [
        (r["traffic"], r["bucket"], r["count"], r["incomplete"]) for r in expected]
    assert sum(r["count"] for r in got if r["traffic"] == "all" and r["bucket"] == "all") == 5
    for g, e in zip(got, expected):
        for key in ("median_fct_ps", "p99_fct_ps", "median_slowdown", "p99_slowdown"):
            assert g[key] == e[key], (g["traffic"], g["bucket"], key)
        for key in ("mean_fct_ps", "mean_slowdown"):
            assert g[key] == (None if e[key] is None else pytest.approx(e[key], rel=1e-15)), (g["traffic"], g["bucket"])
