"""Flow-completion-time (FCT) metrics of TCP flows: per traffic entry and size bucket, with slowdown.

Ideal FCT of a flow of ``S`` application bytes from ``src`` to ``dst`` on an
empty network (store-and-forward, no queueing, window never limiting)::

    ideal = T(syn, src->dst) + T(syn, dst->src)            # handshake: one RTT of header-only frames
          + sum_k w_k * 8 / r_min                          # every data frame serialized at the bottleneck
          + sum_{hops i} (w_1 * 8 / r_i) - w_1 * 8 / r_min  # store-and-forward of one frame at the other hops
          + sum_{hops i} (d_i + l_i)                       # propagation + latency of each receiving node

where ``T(w, path) = sum_i (w * 8 / r_i + d_i + l_i)`` is the one-way time of
a frame of ``w`` wire bytes, ``r_i``/``d_i`` the rate and delay of hop ``i``,
``l_i`` the latency of the node it reaches (switch pipeline latency, host
latency), ``r_min`` the smallest rate on the path, and ``w_k`` the wire size
of data frame ``k`` (payload + TCP/IP header + Ethernet header, at least
``min_frame``, plus the Ethernet overhead). The path is a shortest path (in
hops) in the run's ``links`` table; among equal-cost paths the one with the
largest bottleneck is used (in uniform topologies all are alike).

``slowdown = fct / ideal``, floored at 1 (cut-through switches can beat the
store-and-forward ideal by a few hundred ns on tiny flows).

Only flows whose application started inside ``[warmup, duration - cooldown]``
are counted; flows that never completed are counted separately
(``incomplete``) and left out of the statistics.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np
import polars as pl

from fabricsim.outputs.tables import RunTables
from fabricsim.workloads.cdf import BUCKET_EDGES, bucket_labels

if TYPE_CHECKING:
    from fabricsim.schema import Scenario

__all__ = ["BUCKET_EDGES", "bucket_table", "flow_table", "ideal_fct_ps"]

TCP_KINDS = ("tcp_bulk", "tcp_incast", "tcp_flows", "workload")


class _Paths:
    """Shortest paths between hosts in a run's directed links table."""

    def __init__(self, links: pl.DataFrame, nodes: pl.DataFrame) -> None:
        self.out: dict[str, list[tuple[str, float, float]]] = {}
        for src, dst, rate, delay in links.select("src", "dst", "rate_bps", "delay_ps").iter_rows():
            self.out.setdefault(src, []).append((dst, float(rate), float(delay)))
        self.latency: dict[str, float] = {}
        if "latency_ps" in nodes.columns and "name" in nodes.columns:
            self.latency = {n: float(v) for n, v in nodes.select("name", "latency_ps").iter_rows()}
        self._cache: dict[tuple[str, str], list[tuple[float, float]]] = {}

    def hops(self, src: str, dst: str) -> list[tuple[float, float]]:
        """[(rate_bps, delay_ps + latency of the node reached)] along the best shortest path."""
        key = (src, dst)
        if key in self._cache:
            return self._cache[key]
        # BFS distances from dst on the reversed graph, then a greedy walk keeping the widest path.
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
        # widest (max-min rate) among shortest paths, by dynamic programming over distance layers
        best: dict[str, tuple[float, list[tuple[float, float]]]] = {dst: (float("inf"), [])}
        order = sorted(dist, key=dist.get)  # type: ignore[arg-type]
        for node in order:
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
        path = best[src][1]
        self._cache[key] = path
        return path


def _frame_bytes(payload: int, tcp: Any, overhead: int) -> int:
    return max(payload + tcp.header + tcp.l2_header, tcp.min_frame) + overhead


def ideal_fct_ps(size: int, forward: Sequence[tuple[float, float]], backward: Sequence[tuple[float, float]],
                 tcp: Any, overhead: int) -> float:
    """Ideal FCT (ps) of ``size`` payload bytes over the hops ``forward`` (and ``backward`` for the SYN-ACK)."""
    syn = _frame_bytes(0, tcp, overhead)

    def one_way(wire: int, hops: Sequence[tuple[float, float]]) -> float:
        return sum(wire * 8e12 / rate + delay for rate, delay in hops)

    mss = tcp.mtu - tcp.header
    full, rest = divmod(max(int(size), 1), mss)
    first = _frame_bytes(mss if full else rest, tcp, overhead)
    bits = full * _frame_bytes(mss, tcp, overhead) * 8 + (_frame_bytes(rest, tcp, overhead) * 8 if rest else 0)
    r_min = min(rate for rate, _ in forward)
    data = bits * 1e12 / r_min + one_way(first, forward) - first * 8e12 / r_min
    return one_way(syn, forward) + one_way(syn, backward) + data


def _tcp_of(scenario: "Scenario") -> dict[str, Any]:
    return {
        entry.name: (entry.tcp if getattr(entry, "tcp", None) is not None else scenario.tcp)
        for entry in scenario.traffic
        if entry.kind in TCP_KINDS
    }


def _settings(
    scenario: Optional["Scenario"], warmup: Optional[int], cooldown: Optional[int], edges: Optional[Sequence[int]]
) -> tuple[int, int, list[int]]:
    """``warmup``, ``cooldown`` and bucket ``edges``, each defaulting to the scenario's ``fct`` setting."""
    settings = getattr(scenario, "fct", None) if scenario is not None else None
    if settings is None:
        w0, c0, e0 = 0, 0, list(BUCKET_EDGES)
    else:
        w0, c0, e0 = settings.warmup, settings.cooldown, list(settings.buckets)
    return (w0 if warmup is None else warmup, c0 if cooldown is None else cooldown, list(e0 if edges is None else edges))


def flow_table(
    result: RunTables,
    *,
    warmup: Optional[int] = None,
    cooldown: Optional[int] = None,
    edges: Optional[Sequence[int]] = None,
) -> pl.DataFrame:
    """One row per TCP flow: size, bucket, FCT, ideal FCT, slowdown and whether it is counted.

    ``warmup``/``cooldown`` (ps) and bucket ``edges`` (bytes) default to the
    scenario's ``fct`` settings (0, 0 and 100KB/1MB/10MB).
    """
    scenario = result.scenario
    warmup, cooldown, edges = _settings(scenario, warmup, cooldown, edges)
    flows = result.flows
    empty = pl.DataFrame(
        schema={"flow_id": pl.UInt32, "name": pl.String, "src": pl.String, "dst": pl.String,
                "size_bytes": pl.UInt64, "bucket": pl.String, "start_ps": pl.UInt64, "completed": pl.Boolean,
                "counted": pl.Boolean, "fct_ps": pl.Int64, "ideal_fct_ps": pl.Float64, "slowdown": pl.Float64}
    )
    if scenario is None or flows.height == 0 or "size_bytes" not in flows.columns:
        return empty
    tcp_of = _tcp_of(scenario)
    tcp_flows = flows.filter(pl.col("name").is_in(list(tcp_of)) & (pl.col("size_bytes") > 0))
    if tcp_flows.height == 0:
        return empty
    paths = _Paths(result.links, result.nodes)
    overhead = scenario.network.ethernet_overhead
    ideal = []
    for name, src, dst, size in tcp_flows.select("name", "src", "dst", "size_bytes").iter_rows():
        ideal.append(ideal_fct_ps(size, paths.hops(src, dst), paths.hops(dst, src), tcp_of[name], overhead))
    labels = bucket_labels(edges)
    sizes = tcp_flows["size_bytes"].to_numpy()
    bucket_index = np.searchsorted(np.asarray(edges, dtype=np.float64), sizes, side="left")
    end = scenario.duration - cooldown
    frame = tcp_flows.select(
        "flow_id", "name", "src", "dst", "size_bytes",
        pl.Series("bucket", [labels[i] for i in bucket_index], dtype=pl.String),
        "start_ps",
        pl.col("completed").cast(pl.Boolean),
        ((pl.col("start_ps") >= warmup) & (pl.col("start_ps") <= end)).alias("counted"),
        pl.col("fct_ps").cast(pl.Int64),
        pl.Series("ideal_fct_ps", ideal, dtype=pl.Float64),
    )
    return frame.with_columns(
        pl.when(pl.col("completed") & pl.col("fct_ps").is_not_null())
        .then(pl.max_horizontal(pl.col("fct_ps").cast(pl.Float64) / pl.col("ideal_fct_ps"), pl.lit(1.0)))
        .otherwise(None)
        .alias("slowdown")
    )


def _stat(values: np.ndarray, fn: str) -> Optional[float]:
    """``mean``, ``median`` or ``p99`` (the value at or above the quantile) of ``values``; None when empty."""
    if values.size == 0:
        return None
    if fn == "mean":
        return float(values.mean())
    return float(np.quantile(values, 0.5 if fn == "median" else 0.99, method="higher"))


def bucket_table(
    result: RunTables,
    *,
    warmup: Optional[int] = None,
    cooldown: Optional[int] = None,
    edges: Optional[Sequence[int]] = None,
) -> pl.DataFrame:
    """Per traffic entry and size bucket: counted flows, incomplete ones, FCT
    mean/median/p99 (ps) and slowdown mean/median/p99.

    Rows with ``traffic == "all"`` pool every TCP entry; then each entry (its
    ``name``) has its own rows, in scenario order. Each group ends with the
    bucket ``all``. Empty when the run has no TCP flows.
    """
    flows = flow_table(result, warmup=warmup, cooldown=cooldown, edges=edges)
    if flows.height == 0:
        return pl.DataFrame()
    labels = bucket_labels(_settings(result.scenario, warmup, cooldown, edges)[2])
    counted = flows.filter(pl.col("counted"))
    entries = list(dict.fromkeys(name for name in _tcp_of(result.scenario) if name in set(flows["name"].to_list())))
    rows = []
    for traffic in ["all", *entries]:
        scope = counted if traffic == "all" else counted.filter(pl.col("name") == traffic)
        for label in [*labels, "all"]:
            group = scope if label == "all" else scope.filter(pl.col("bucket") == label)
            done = group.filter(pl.col("completed") & pl.col("fct_ps").is_not_null())
            fct = done["fct_ps"].cast(pl.Float64).to_numpy()
            slow = done["slowdown"].to_numpy()
            rows.append(
                {
                    "traffic": traffic,
                    "bucket": label,
                    "count": done.height,
                    "incomplete": group.height - done.height,
                    "mean_fct_ps": _stat(fct, "mean"),
                    "median_fct_ps": _stat(fct, "median"),
                    "p99_fct_ps": _stat(fct, "p99"),
                    "mean_slowdown": _stat(slow, "mean"),
                    "median_slowdown": _stat(slow, "median"),
                    "p99_slowdown": _stat(slow, "p99"),
                }
            )
    schema = {"traffic": pl.String, "bucket": pl.String, "count": pl.UInt64, "incomplete": pl.UInt64}
    schema.update({k: pl.Float64 for k in rows[0] if k not in schema})
    return pl.DataFrame(rows, schema=schema)


def summary_metrics(table: pl.DataFrame) -> dict[str, Any]:
    """Flat ``fct.<bucket>.*`` figures (all traffic) and ``fct.<entry>.<bucket>.*``
    (per traffic entry) of a :func:`bucket_table`, for summaries and catalogs."""
    out: dict[str, Any] = {}
    for row in table.iter_rows(named=True):
        scope = "" if row.get("traffic", "all") == "all" else f"{row['traffic']}."
        for name in ("count", "mean_fct_ps", "p99_fct_ps", "mean_slowdown", "p99_slowdown"):
            out[f"fct.{scope}{row['bucket']}.{name}"] = row[name]
    return out
