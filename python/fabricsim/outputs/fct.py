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
largest bottleneck is used, the first in the table's link order among equals
(in uniform topologies all are alike). Paths are searched once per destination.

``slowdown = fct / ideal``, floored at 1 (cut-through switches can beat the
store-and-forward ideal by a few hundred ns on tiny flows).

Only flows whose application started inside ``[warmup, duration - cooldown]``
are counted; flows that never completed are counted separately
(``incomplete``) and left out of the statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

import polars as pl

from fabricsim.outputs.tables import RunTables
from fabricsim.workloads.cdf import BUCKET_EDGES, bucket_labels

if TYPE_CHECKING:
    import numpy as np

    from fabricsim.schema import Scenario

__all__ = ["BUCKET_EDGES", "bucket_table", "flow_table", "ideal_fct_ps"]

TCP_KINDS = ("tcp_bulk", "tcp_incast", "tcp_flows", "workload")


class _Paths:
    """Shortest paths between hosts in a run's directed links table.

    Among the shortest paths (in hops) from ``src`` to ``dst``, the widest
    (largest bottleneck rate) is taken; ties go to the first link in the
    table's order at each node. Paths are found once per destination for
    every source that needs one: a breadth-first search backwards from the
    destination, then a pass over the distance layers that keeps, at each
    node, its first widest link one layer closer (numpy over the whole edge
    list, so the cost per destination is a few array operations per layer).
    """

    def __init__(self, links: pl.DataFrame, nodes: pl.DataFrame) -> None:
        import numpy as np

        edges = links.select("src", "dst", "rate_bps", "delay_ps")
        names = list(dict.fromkeys([*edges["src"].to_list(), *edges["dst"].to_list()]))
        self.index = {name: i for i, name in enumerate(names)}
        latency = np.zeros(len(names), dtype=np.float64)
        if "latency_ps" in nodes.columns and "name" in nodes.columns:
            for name, value in nodes.select("name", "latency_ps").iter_rows():
                if name in self.index:
                    latency[self.index[name]] = float(value)
        index = self.index
        self.e_src = np.fromiter((index[n] for n in edges["src"].to_list()), dtype=np.int64, count=edges.height)
        self.e_dst = np.fromiter((index[n] for n in edges["dst"].to_list()), dtype=np.int64, count=edges.height)
        self.e_rate = edges["rate_bps"].cast(pl.Float64).to_numpy()
        # the time of a hop counts the link's delay and the latency of the node it reaches
        self.e_delay = edges["delay_ps"].cast(pl.Float64).to_numpy() + latency[self.e_dst]
        self.names = names

    def _tree(self, target: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Paths to ``target``: (distance in hops, -1 where none; the link each node
        takes; every link one hop closer to the target; the width of the widest
        path through each of those links)."""
        import numpy as np

        size = len(self.names)
        e_src, e_dst = self.e_src, self.e_dst
        dist = np.full(size, -1, dtype=np.int64)
        dist[target] = 0
        frontier = np.zeros(size, dtype=bool)
        frontier[target] = True
        layer = 0
        while True:
            reached = e_src[frontier[e_dst] & (dist[e_src] < 0)]
            if reached.size == 0:
                break
            layer += 1
            dist[reached] = layer
            frontier[:] = False
            frontier[reached] = True
        width = np.full(size, -np.inf)
        width[target] = np.inf
        step = np.full(size, -1, dtype=np.int64)
        d_src, d_dst = dist[e_src], dist[e_dst]
        down = (d_dst >= 0) & (d_src == d_dst + 1)
        for level in range(1, layer + 1):
            edge = np.flatnonzero(down & (d_src == level))
            candidate = np.minimum(self.e_rate[edge], width[e_dst[edge]])
            first = self._first_widest(edge, candidate)
            step[e_src[edge[first]]] = edge[first]
            width[e_src[edge[first]]] = candidate[first]
        edge = np.flatnonzero(down)
        return dist, step, edge, np.minimum(self.e_rate[edge], width[e_dst[edge]])

    def _first_widest(self, edge: np.ndarray, candidate: np.ndarray) -> np.ndarray:
        """Per node owning some of ``edge``: the position of its widest candidate, the first in link order among equals."""
        import numpy as np

        owner = self.e_src[edge]
        order = np.lexsort((edge, -candidate, owner))
        owner_sorted = owner[order]
        return order[np.r_[True, owner_sorted[1:] != owner_sorted[:-1]]]

    def _leaf_link(self) -> np.ndarray:
        """For each node reached by exactly one link (a host on one switch port), that link; -1 otherwise."""
        import numpy as np

        size = len(self.names)
        count = np.bincount(self.e_dst, minlength=size)
        only = np.full(size, -1, dtype=np.int64)
        single = count[self.e_dst] == 1
        only[self.e_dst[single]] = np.flatnonzero(single)
        only[self.e_src[only[np.arange(size)]] == np.arange(size)] = -1  # a link from a node to itself is no way in
        return only

    def _groups(self, dst: np.ndarray) -> Any:
        """The pairs' rows grouped by how their destination is searched:
        ``(rows, via, dist, step, last)``: every row's path is its walk along
        ``step`` to ``via``, then the link ``last[row]`` (-1: none).

        A destination reached by a single link ``t -> d`` (a host on one switch
        port) is reached through ``t``: its distances are ``t``'s plus one, and
        the widest path from a node is the widest to ``t`` with the widths
        capped at that link's rate (ties to the first link in table order, as in
        a search of its own). One search per such ``t`` and one pass per
        distinct cap serve every host on ``t``; other destinations get a search
        of their own.
        """
        import numpy as np

        leaf = self._leaf_link()[dst]
        rate = np.where(leaf >= 0, self.e_rate[leaf], 0.0)
        via = np.where(leaf >= 0, self.e_src[leaf], dst)
        own = leaf < 0
        keys = np.stack([via, own.astype(np.int64), np.where(own, dst, 0)], axis=1)
        # group rows by (via, cap) for leaves and by destination otherwise
        order = np.lexsort((rate, keys[:, 2], keys[:, 1], keys[:, 0]))
        k, r = keys[order], rate[order]
        change = np.r_[True, np.any(k[1:] != k[:-1], axis=1) | (r[1:] != r[:-1])]
        bounds = np.r_[np.flatnonzero(change), len(order)]
        searched: dict[int, Any] = {}
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            rows = order[lo:hi]
            target = int(via[rows[0]])
            if target not in searched:
                searched[target] = self._tree(target)
            dist, step, edge, width = searched[target]
            if own[rows[0]]:
                yield rows, target, dist, step, np.full(rows.size, -1, dtype=np.int64)
                continue
            first = self._first_widest(edge, np.minimum(width, rate[rows[0]]))
            shared = np.full(len(self.names), -1, dtype=np.int64)
            shared[self.e_src[edge[first]]] = edge[first]
            yield rows, target, dist, shared, leaf[rows]

    def ids(self, names: pl.Series) -> np.ndarray:
        """The node number of each name (-1 for a name that is in no link)."""
        import numpy as np

        known = pl.Series(list(self.index), dtype=pl.String)
        return names.cast(pl.String).replace_strict(known, np.arange(len(known)), default=-1, return_dtype=pl.Int64).to_numpy()

    def hops(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        """For each ``(src, dst)``: the rates and times (delay + latency of the
        node reached) of the hops of its path, as two arrays of one row per
        pair; rows are padded with rate ``inf`` and time 0 (a hop that adds 0 ps)."""
        src = self.ids(pl.Series([a for a, _ in pairs], dtype=pl.String))
        dst = self.ids(pl.Series([b for _, b in pairs], dtype=pl.String))
        return self.hops_of(src, dst)

    def hops_of(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`hops` of node numbers (:meth:`ids`)."""
        import numpy as np

        missing = np.flatnonzero((src < 0) | (dst < 0))
        if missing.size:
            raise ValueError(f"no path from {self._name(src, missing[0])} to {self._name(dst, missing[0])}")
        walks: list[tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]] = []
        longest = 0
        for rows, target, dist, step, last in self._groups(dst):
            cur = src[rows]
            itself = cur == dst[rows]  # no hop from a node to itself
            lost = np.flatnonzero((dist[cur] < 0) & ~itself)
            if lost.size:
                row = int(rows[lost[0]])
                raise ValueError(f"no path from {self.names[src[row]]} to {self.names[dst[row]]}")
            cur = np.where(itself, target, cur)
            rates, times = [], []
            while True:
                moving = cur != target
                if not moving.any():
                    break
                edge = step[np.where(moving, cur, target)]
                rates.append(np.where(moving, self.e_rate[edge], np.inf))
                times.append(np.where(moving, self.e_delay[edge], 0.0))
                cur = np.where(moving, self.e_dst[edge], target)
            final = (last >= 0) & ~itself
            if final.any():
                rates.append(np.where(final, self.e_rate[last], np.inf))
                times.append(np.where(final, self.e_delay[last], 0.0))
            longest = max(longest, len(rates))
            walks.append((rows, rates, times))
        rate = np.full((len(src), longest), np.inf)
        time = np.zeros((len(src), longest))
        for rows, rates, times in walks:
            for column, (r, t) in enumerate(zip(rates, times)):
                rate[rows, column] = r
                time[rows, column] = t
        return rate, time

    def _name(self, ids: np.ndarray, row: int) -> str:
        return self.names[ids[row]] if ids[row] >= 0 else "?"


def _frame_bytes(payload: int, tcp: Any, overhead: int) -> int:
    return max(payload + tcp.header + tcp.l2_header, tcp.min_frame) + overhead


def _one_way(wire: int, hops: Sequence[tuple[float, float]]) -> float:
    """Time (ps) of a frame of ``wire`` bytes over ``hops``: the hop times added in path order."""
    total = 0.0
    for rate, delay in hops:
        total += wire * 8e12 / rate + delay
    return total


def ideal_fct_ps(size: int, forward: Sequence[tuple[float, float]], backward: Sequence[tuple[float, float]],
                 tcp: Any, overhead: int) -> float:
    """Ideal FCT (ps) of ``size`` payload bytes over the hops ``forward`` (and ``backward`` for the SYN-ACK)."""
    syn = _frame_bytes(0, tcp, overhead)
    mss = tcp.mtu - tcp.header
    full, rest = divmod(max(int(size), 1), mss)
    first = _frame_bytes(mss if full else rest, tcp, overhead)
    bits = full * _frame_bytes(mss, tcp, overhead) * 8 + (_frame_bytes(rest, tcp, overhead) * 8 if rest else 0)
    r_min = min(rate for rate, _ in forward)
    data = bits * 1e12 / r_min + _one_way(first, forward) - first * 8e12 / r_min
    return _one_way(syn, forward) + _one_way(syn, backward) + data


def _one_way_many(wire: np.ndarray | int, rate: np.ndarray, time: np.ndarray) -> np.ndarray:
    """:func:`_one_way` of each row of padded hop arrays (padding adds exactly 0)."""
    import numpy as np

    total = np.zeros(rate.shape[0])
    for column in range(rate.shape[1]):
        total = total + (wire * 8e12 / rate[:, column] + time[:, column])
    return total


def _ideal_fct_many(size: np.ndarray, forward: tuple[np.ndarray, np.ndarray], backward: tuple[np.ndarray, np.ndarray],
                    tcp: Any, overhead: int) -> np.ndarray:
    """:func:`ideal_fct_ps` of many flows at once, the same operations in the same order (the same bits)."""
    import numpy as np

    syn = _frame_bytes(0, tcp, overhead)
    mss = tcp.mtu - tcp.header
    fixed = tcp.header + tcp.l2_header
    sizes = np.maximum(size.astype(np.int64), 1)
    full, rest = sizes // mss, sizes % mss
    frame_rest = np.maximum(rest + fixed, tcp.min_frame) + overhead
    frame_mss = _frame_bytes(mss, tcp, overhead)
    first = np.where(full > 0, frame_mss, frame_rest)
    bits = full * frame_mss * 8 + np.where(rest > 0, frame_rest * 8, 0)
    r_min = forward[0].min(axis=1)
    data = bits * 1e12 / r_min + _one_way_many(first, *forward) - first * 8e12 / r_min
    return _one_way_many(syn, *forward) + _one_way_many(syn, *backward) + data


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


def _ideal_column(flows: pl.DataFrame, paths: _Paths, tcp_of: dict[str, Any], overhead: int) -> np.ndarray:
    """The ideal FCT (ps) of each row of ``flows`` (columns name, src, dst, size_bytes)."""
    import numpy as np

    src, dst = paths.ids(flows["src"]), paths.ids(flows["dst"])
    missing = np.flatnonzero((src < 0) | (dst < 0))
    if missing.size:
        row = int(missing[0])
        raise ValueError(f"no path from {flows['src'][row]} to {flows['dst'][row]}")
    for row in np.flatnonzero(src == dst):  # a flow to itself has no hop: the scalar formula says why it has no ideal
        ideal_fct_ps(flows["size_bytes"][int(row)], [], [], tcp_of[flows["name"][int(row)]], overhead)
    # every (src, dst) path once, in both directions
    size = max(len(paths.names), 1)
    keys, inverse = np.unique(np.concatenate([src * size + dst, dst * size + src]), return_inverse=True)
    rate, time = paths.hops_of(keys // size, keys % size)
    forward, backward = inverse[: flows.height], inverse[flows.height :]
    ideal = np.empty(flows.height)
    names = flows["name"]
    sizes = flows["size_bytes"].to_numpy()
    for name, tcp in tcp_of.items():
        rows = np.flatnonzero((names == name).to_numpy())
        if rows.size == 0:
            continue
        f, b = forward[rows], backward[rows]
        ideal[rows] = _ideal_fct_many(sizes[rows], (rate[f], time[f]), (rate[b], time[b]), tcp, overhead)
    return ideal


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
    # The report asks again for the table the statistics were computed from.
    return result.memo(
        "_flow_table",
        (flows, result.links, result.nodes, scenario),
        lambda: _flow_table(scenario, flows, result, warmup, cooldown, edges),
        (warmup, cooldown, edges),
    )


def _flow_table(
    scenario: Optional["Scenario"], flows: pl.DataFrame, result: RunTables, warmup: int, cooldown: int, edges: list[int]
) -> pl.DataFrame:
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
    import numpy as np  # only runs with TCP flows get here

    ideal = _ideal_column(tcp_flows, _Paths(result.links, result.nodes), tcp_of, scenario.network.ethernet_overhead)
    labels = bucket_labels(edges)
    sizes = tcp_flows["size_bytes"].to_numpy()
    bucket_index = np.searchsorted(np.asarray(edges, dtype=np.float64), sizes, side="left")
    end = scenario.duration - cooldown
    frame = tcp_flows.select(
        "flow_id", "name", "src", "dst", "size_bytes",
        pl.Series("bucket", np.asarray(labels, dtype=object)[bucket_index], dtype=pl.String),
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
    import numpy as np

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
    import numpy as np  # only runs with TCP flows get here
    labels = bucket_labels(_settings(result.scenario, warmup, cooldown, edges)[2])
    counted = flows.filter(pl.col("counted"))
    entries = list(dict.fromkeys(name for name in _tcp_of(result.scenario) if name in set(flows["name"].to_list())))
    # Each group (entry x bucket) is a boolean mask over the counted flows' columns, in their order.
    names = counted["name"].to_numpy()
    buckets = counted["bucket"].to_numpy()
    finished = (counted["completed"] & counted["fct_ps"].is_not_null()).fill_null(False).to_numpy()
    fct_all = counted["fct_ps"].cast(pl.Float64).to_numpy()
    slow_all = counted["slowdown"].to_numpy()
    rows = []
    for traffic in ["all", *entries]:
        scope = np.ones(counted.height, dtype=bool) if traffic == "all" else names == traffic
        for label in [*labels, "all"]:
            group = scope if label == "all" else scope & (buckets == label)
            done = group & finished
            fct = fct_all[done]
            slow = slow_all[done]
            count = int(done.sum())
            rows.append(
                {
                    "traffic": traffic,
                    "bucket": label,
                    "count": count,
                    "incomplete": int(group.sum()) - count,
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
