"""``kind: collective`` traffic: expansion into a dependent flow list, and the ``collectives`` table.

A collective of ``n`` ranks (``hosts``, in ring order) over ``size`` = S bytes
per rank becomes an explicit ``tcp_flows`` list (``transport: roce``: an
``rdma_flows`` list of RDMA WRITE transfers, the same flows) whose flows wait
for others (``after``, ``compute``), NCCL-like:

- ring algorithms (``all_reduce``: 2(n-1) steps, reduce-scatter then
  all-gather; ``reduce_scatter`` and ``all_gather``: n-1 steps). At every
  step each rank r sends one chunk of S/n bytes to rank r+1 (mod n). Rank r's
  step s starts when its step s-1 is done: its send (r -> r+1) and its receive
  (r-1 -> r) of step s-1 have completed.
- ``schedule: halving_doubling`` (n a power of two, Rabenseifner's
  algorithm): reduce-scatter by recursive halving, log2(n) steps at partner
  distances n/2, n/4, ..., 1, where rank r and its partner r XOR d split the
  byte range they share and each sends the half the other keeps (S/2, S/4,
  ..., S/n bytes); all-gather by recursive doubling, log2(n) steps at
  distances 1, 2, ..., n/2, each rank sending everything it holds to its
  partner (S/n, 2S/n, ..., S/2). ``all_reduce`` is the two phases: the same
  2(n-1)/n x S bytes per rank as the ring in 2 log2(n) steps instead of
  2(n-1). A step starts when the rank's send and receive of the step before
  have completed.
- ``schedule: tree`` (``all_reduce`` only): NCCL's double binary tree
  (:func:`double_binary_tree`), two trees over the ranks, each carrying S/2
  (per channel S/(2C)) split into chunks of at most ``chunk_size``. Per tree
  and chunk every edge carries one flow up (reduce) and one down (broadcast):
  a rank sends chunk k to its parent once its children's chunk k has arrived
  and its own chunk k-1 to the parent has; it sends chunk k to a child once
  chunk k has arrived from its parent (the root: from its children) and its
  chunk k-1 to that child has. Chunks of a tree are ``size / channels / 2``
  split as evenly as integers allow into ceil(that / ``chunk_size``).
- ``all_to_all``: rank r sends S/n bytes (chunk p of its buffer) to every
  other rank p, all at once.
- ``channels`` = C splits every transfer into C parallel rings of its own
  (each flow S/(nC) bytes; a tree: C double binary trees, each over S/C);
  the channels of a rank advance independently.
- ``iterations``: rank r starts iteration k+1 ``compute`` after its part of
  iteration k is done (the last step's sends and receives of every channel).
  In a tree, a leaf's first send of iteration k+1 waits for the leaf's part
  of iteration k and for the part in that tree of every rank on its way to
  the root, so that no rank takes part in a tree before it is done with the
  tree's iteration k plus ``compute``.

Chunk sizes are exact integers: chunk i of S over n is ``S // n`` plus one byte
for the first ``S % n`` chunks, and likewise for a chunk over the channels.

The ``collectives`` table (:func:`collectives_table`) has one row per
collective entry and iteration: start (its first flow's start), end (its last
flow's completion), ``time_ps``, the algorithm bandwidth ``algbw = S / time``
and the bus bandwidth as NCCL reports it, ``busbw = algbw x 2(n-1)/n`` for
all-reduce and ``x (n-1)/n`` for the others, and the slowest rank (whose part
ended last).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import polars as pl

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "binary_tree", "bus_factor", "collectives_table", "double_binary_tree", "expand", "flow_ranks", "resolved_flows",
    "tree_children", "tree_depths",
]


def _part(total: int, parts: int, i: int) -> int:
    """Bytes of part ``i`` of ``total`` split into ``parts`` as evenly as integers allow."""
    return total // parts + (1 if i < total % parts else 0)


def bus_factor(algorithm: str, n: int) -> float:
    """busbw / algbw as NCCL's tests report it for ``n`` ranks."""
    return 2 * (n - 1) / n if algorithm == "all_reduce" else (n - 1) / n


def _chunk(algorithm: str, n: int, rank: int, step: int) -> int:
    """The chunk rank ``rank`` sends at ring step ``step`` (only its size matters)."""
    if algorithm == "all_gather":
        return (rank + 1 - step) % n
    if step < n - 1:  # reduce-scatter
        return (rank - step) % n
    return (rank + 1 - (step - (n - 1))) % n  # all-gather phase of all-reduce


def halving_doubling_steps(algorithm: str, n: int, size: int) -> list[list[tuple[int, int]]]:
    """The halving-doubling schedule of ``n`` ranks (a power of two) over ``size``
    bytes: per step, per rank ``(partner, bytes it sends)``."""
    ranges = [(0, size)] * n  # the byte range each rank reduces, narrowed by halving
    halving: list[list[tuple[int, int]]] = []
    d = n // 2
    while d >= 1:
        step, narrowed = [], list(ranges)
        for r in range(n):
            lo, hi = ranges[r]
            mid = lo + (hi - lo) // 2
            keep, give = ((lo, mid), (mid, hi)) if r & d == 0 else ((mid, hi), (lo, mid))
            step.append((r ^ d, give[1] - give[0]))
            narrowed[r] = keep
        ranges = narrowed
        halving.append(step)
        d //= 2
    doubling: list[list[tuple[int, int]]] = []
    held = [hi - lo for lo, hi in ranges]  # each rank's reduced part, then what it has gathered
    d = 1
    while d < n:
        doubling.append([(r ^ d, held[r]) for r in range(n)])
        held = [held[r] + held[r ^ d] for r in range(n)]
        d *= 2
    if algorithm == "reduce_scatter":
        return halving
    if algorithm == "all_gather":
        return doubling
    return halving + doubling


def binary_tree(n: int) -> list[int]:
    """NCCL's binary tree of ``n`` ranks rooted at rank 0: per rank its parent (-1
    for the root). A rank whose lowest set bit is b has the parent
    ``(r - b) | 2b``, or ``r - b`` where that is out of range; its children are
    ``r - b/2`` and ``r + b/2`` (or ``r + b/4``, ..., the first in range), so the
    odd ranks are the leaves. The root has one child, the largest power of two
    below ``n``."""
    parent = [-1] * n
    for r in range(1, n):
        low = r & -r
        up = (r ^ low) | (low << 1)
        parent[r] = up if up < n else r ^ low
    return parent


def double_binary_tree(n: int) -> tuple[list[int], list[int]]:
    """NCCL's double binary tree: the binary tree and its complement, per rank its
    parent in each. The second is the first mirrored (rank r in the place of
    n - 1 - r) for an even ``n``, so every rank is a leaf in one tree and has
    children in the other; shifted by one rank (r in the place of r - 1) for an
    odd ``n``. Roots: rank 0 and rank n - 1 (even n) or 1 (odd n)."""
    first = binary_tree(n)
    if n % 2 == 0:
        second = [-1 if first[n - 1 - r] < 0 else n - 1 - first[n - 1 - r] for r in range(n)]
    else:
        second = [-1 if first[(r - 1) % n] < 0 else (first[(r - 1) % n] + 1) % n for r in range(n)]
    return first, second


def tree_children(parent: list[int]) -> list[list[int]]:
    """Per rank its children (ascending) in the tree given by ``parent``."""
    children: list[list[int]] = [[] for _ in parent]
    for r, p in enumerate(parent):
        if p >= 0:
            children[p].append(r)
    return children


def tree_depths(parent: list[int]) -> list[int]:
    """Per rank its distance to the root (edges)."""
    def depth(r: int) -> int:
        d = 0
        while parent[r] >= 0:
            r, d = parent[r], d + 1
        return d
    return [depth(r) for r in range(len(parent))]


def _expand_tree(
    entry: Any, add: Any, boundary: list[list[int]], last: list[list[list[int]]], compute: int, k: int
) -> tuple[list[list[int]], list[list[list[int]]]]:
    """The flows of iteration ``k`` of a tree all-reduce (``schedule: tree``), made
    with ``add``: per channel, both trees of the double binary tree, every chunk one
    flow per tree edge and direction. ``boundary``: per rank the flows it ended the
    previous iteration with; ``last``: the same per tree (index 2c + t) and rank.
    Returns both for this iteration."""
    n = len(entry.hosts)
    trees = []
    for parent in double_binary_tree(n):
        depth = tree_depths(parent)
        order = sorted(range(n), key=lambda r: (-depth[r], r))  # deepest first: children before their parent
        trees.append((parent, tree_children(parent), order))
    parts = entry.tree_parts()  # per channel c and tree t, at index 2c + t: (bytes, chunks)
    up = [[-1] * n for _ in parts]  # per tree and rank: its latest send to its parent
    down = [[-1] * n for _ in parts]  # per tree and rank: its parent's latest send to it
    for chunk in range(max(chunks for _, chunks in parts)):
        for index, (data, chunks) in enumerate(parts):
            if chunk >= chunks:
                continue
            parent, children, order = trees[index % 2]
            nbytes = _part(data, chunks, chunk)
            ups, downs = up[index], down[index]
            # Reduce: rank r sends the chunk to its parent once its children's have arrived
            # and its previous chunk to the parent has.
            for r in order:
                if parent[r] < 0:
                    continue
                after = {ups[c] for c in children[r]}
                wait = 0
                if chunk > 0:
                    after.add(ups[r])
                elif not children[r]:
                    # A leaf opens the iteration once it is done with the previous one and so is, in this tree, every
                    # rank on its way to the root, `compute` later.
                    after.update(boundary[r])
                    if last:
                        u = parent[r]
                        while u >= 0:
                            after.update(last[index][u])
                            u = parent[u]
                    wait = compute
                ups[r] = add(r, parent[r], nbytes, sorted(after), wait, k)
            # Broadcast: rank r sends the chunk to each child once it has it (the root: once its children's have
            # arrived, its reduction done) and its previous chunk to that child has arrived.
            for r in reversed(order):
                have = {downs[r]} if parent[r] >= 0 else {ups[c] for c in children[r]}
                for c in children[r]:
                    downs[c] = add(r, c, nbytes, sorted(have | ({downs[c]} if chunk > 0 else set())), 0, k)
    # A rank is done with a tree when its last chunk has gone down to its children (a leaf: come down to it); all
    # its other flows of the tree complete before, the root's broadcast of a chunk waiting for every rank's reduce.
    last = [[sorted(down[index][c] for c in trees[index % 2][1][r]) or [down[index][r]] for r in range(n)]
            for index in range(len(parts))]
    return [sorted({i for per_tree in last for i in per_tree[r]}) for r in range(n)], last


def _expand_all_to_all(
    entry: Any, flows: list[dict[str, Any]], meta: list[tuple[int, int, int]], boundary: list[list[int]],
    compute: int, k: int, last: bool,
) -> list[list[int]]:
    """Iteration ``k`` of an all-to-all, appended to ``flows`` and ``meta`` as :func:`expand`'s
    ``add`` would: per channel, per rank r, one flow to each peer ``r + 1 .. r + n - 1`` (mod n)
    of 1/n of ``size`` split over the channels, after r's flows of the iteration before. Written
    out (a million flows at 1,024 ranks). Returns per rank the flows it ends the iteration with
    (empty lists after the ``last`` iteration, when nothing waits on them)."""
    hosts = list(entry.hosts)
    n, channels, size, start = len(hosts), entry.channels, entry.size, entry.start
    ends: list[list[int]] = [[] for _ in range(n)]
    for c in range(channels):
        sizes = [_part(_part(size, n, p), channels, c) for p in range(n)]
        for r in range(n):
            src, after = hosts[r], boundary[r]
            first = len(flows)
            peers = [(r + offset) % n for offset in range(1, n)]
            if not after:
                flows.extend({"src": src, "dst": hosts[p], "bytes": sizes[p], "start_ps": start} for p in peers)
            elif compute:
                flows.extend({"src": src, "dst": hosts[p], "bytes": sizes[p], "start_ps": start, "after": list(after),
                              "compute_ps": compute} for p in peers)
            else:
                flows.extend({"src": src, "dst": hosts[p], "bytes": sizes[p], "start_ps": start, "after": list(after)}
                             for p in peers)
            meta.extend((k, r, p) for p in peers)
            if not last:
                ends[r].extend(range(first, len(flows)))
                for i, p in enumerate(peers, first):
                    ends[p].append(i)
    return [sorted(e) for e in ends] if not last else [[] for _ in range(n)]


def expand(entry: Any) -> tuple[list[dict[str, Any]], list[tuple[int, int, int]]]:
    """The flows of collective ``entry`` in resolved form (``src``, ``dst``,
    ``bytes``, ``start_ps``, ``after`` and ``compute_ps`` where it waits), and
    per flow ``(iteration, source rank, destination rank)``."""
    hosts = list(entry.hosts)
    n, channels, size = len(hosts), entry.channels, entry.size
    flows: list[dict[str, Any]] = []
    meta: list[tuple[int, int, int]] = []

    def add(src: int, dst: int, nbytes: int, after: list[int], compute: int, k: int) -> int:
        f: dict[str, Any] = {"src": hosts[src], "dst": hosts[dst], "bytes": nbytes, "start_ps": entry.start}
        if after:
            f["after"] = after
            if compute:
                f["compute_ps"] = compute
        flows.append(f)
        meta.append((k, src, dst))
        return len(flows) - 1

    # Per rank: the flows its previous iteration ends with (sends and receives).
    boundary: list[list[int]] = [[] for _ in range(n)]
    tree_last: list[list[list[int]]] = []  # a tree's: per tree, per rank the flows it ended the tree with
    for k in range(entry.iterations):
        compute = entry.compute if k > 0 else 0
        if entry.algorithm == "all_to_all":
            boundary = _expand_all_to_all(entry, flows, meta, boundary, compute, k, last=k == entry.iterations - 1)
            continue
        if getattr(entry, "schedule", "ring") == "tree":
            boundary, tree_last = _expand_tree(entry, add, boundary, tree_last, compute, k)
            continue
        if getattr(entry, "schedule", "ring") == "halving_doubling":
            # flows[c][r]: rank r's send of the step before, on channel c; received[c][r]: what it received
            sent: list[list[int]] = [[-1] * n for _ in range(channels)]
            received: list[list[int]] = [[-1] * n for _ in range(channels)]
            for s, step in enumerate(halving_doubling_steps(entry.algorithm, n, size)):
                new_sent = [[-1] * n for _ in range(channels)]
                new_received = [[-1] * n for _ in range(channels)]
                for c in range(channels):
                    for r in range(n):
                        partner, nbytes = step[r]
                        if s == 0:
                            after, wait = list(boundary[r]), compute
                        else:
                            after, wait = sorted({sent[c][r], received[c][r]}), 0
                        i = add(r, partner, _part(nbytes, channels, c), after, wait, k)
                        new_sent[c][r] = i
                        new_received[c][partner] = i
                sent, received = new_sent, new_received
            boundary = [sorted({sent[c][r] for c in range(channels)} | {received[c][r] for c in range(channels)})
                        for r in range(n)]
            continue
        sends: list[list[int]] = [[-1] * n for _ in range(channels)]
        for s in range(entry.steps()):
            new = [[-1] * n for _ in range(channels)]
            for c in range(channels):
                for r in range(n):
                    if s == 0:
                        after, wait = list(boundary[r]), compute
                    else:
                        after, wait = sorted({sends[c][r], sends[c][(r - 1) % n]}), 0
                    nbytes = _part(_part(size, n, _chunk(entry.algorithm, n, r, s)), channels, c)
                    new[c][r] = add(r, (r + 1) % n, nbytes, after, wait, k)
            sends = new
        boundary = [sorted({sends[c][r] for c in range(channels)} | {sends[c][(r - 1) % n] for c in range(channels)})
                    for r in range(n)]
    return flows, meta


def flow_ranks(entry: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per flow of :func:`expand`'s list, in its order: the iteration, the source rank and the
    destination rank (its ``meta`` as three arrays). Ring and all-to-all schedules are written
    down directly (their flows are the same every iteration); the others come from the
    expansion."""
    import numpy as np

    n, channels, iterations = len(entry.hosts), entry.channels, entry.iterations
    schedule = getattr(entry, "schedule", "ring")
    if entry.algorithm == "all_to_all":
        src = np.repeat(np.arange(n, dtype=np.int64), n - 1)
        dst = (src + np.tile(np.arange(1, n, dtype=np.int64), n)) % n
        per_iteration = channels * n * (n - 1)
        src, dst = np.tile(src, channels * iterations), np.tile(dst, channels * iterations)
    elif schedule == "ring":
        per_iteration = entry.steps() * channels * n
        src = np.tile(np.arange(n, dtype=np.int64), entry.steps() * channels * iterations)
        dst = (src + 1) % n
    else:
        _, meta = expand(entry)
        if not meta:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        ks, srcs, dsts = (np.asarray(column, dtype=np.int64) for column in zip(*meta))
        return ks, srcs, dsts
    return np.repeat(np.arange(iterations, dtype=np.int64), per_iteration), src, dst


def resolved_flows(scenario: Any, index: int) -> list[dict[str, Any]]:
    """The resolved flow list of collective entry ``index`` (its hosts checked first), for ``tcp_flows`` or
    ``rdma_flows``."""
    from fabricsim.workloads import flowgen

    entry = scenario.traffic[index]
    flowgen._known(list(entry.hosts), flowgen.host_rates(scenario.topology), f"traffic[{index}].hosts", scenario)
    return expand(entry)[0]


_COLUMNS = {
    "name": pl.String, "algorithm": pl.String, "transport": pl.String, "iteration": pl.UInt32, "ranks": pl.UInt32, "channels": pl.UInt32,
    "bytes": pl.UInt64, "flows": pl.UInt32, "completed": pl.Boolean, "start_ps": pl.Int64, "end_ps": pl.Int64,
    "time_ps": pl.Int64, "algbw_gbps": pl.Float64, "busbw_gbps": pl.Float64, "slowest_rank": pl.String,
}


def collectives_table(run: Any) -> pl.DataFrame:
    """One row per collective entry and iteration of ``run`` (a result with its
    scenario); empty when the scenario has no collective."""
    scenario: Optional[Any] = run.scenario
    entries = [t for t in (scenario.traffic if scenario is not None else []) if t.kind == "collective"]
    if not entries or not run.flows.height:
        return pl.DataFrame(schema=_COLUMNS)
    import numpy as np

    rows: list[dict[str, Any]] = []
    for entry in entries:
        ks, srcs, dsts = flow_ranks(entry)
        frame = run.flows.filter(pl.col("name") == entry.name).sort("flow_id")
        if frame.height != len(ks):
            continue  # not the flows of this entry (a run cut short before they were built)
        starts = frame["start_ps"].cast(pl.Int64).to_numpy()
        fct_column = frame["fct_ps"].cast(pl.Int64)
        finished = fct_column.is_not_null().to_numpy()
        ends = starts + fct_column.fill_null(0).to_numpy()
        sent = frame["packets_sent"].to_numpy() > 0
        n = len(entry.hosts)
        for k in np.unique(ks).tolist():
            members = ks == k
            opened = starts[members & sent]
            done = bool(finished[members].all())
            start = int(opened.min()) if opened.size else None
            end = int(ends[members].max()) if done else None
            time = end - start if done and start is not None else None
            # Per rank: when its last finished flow of the iteration (sent or received) ended.
            rank_end = np.zeros(n, dtype=np.int64)
            counted = members & finished
            np.maximum.at(rank_end, srcs[counted], ends[counted])
            np.maximum.at(rank_end, dsts[counted], ends[counted])
            algbw = entry.size * 8 / (time / 1e12) / 1e9 if time else None
            rows.append({
                "name": entry.name, "algorithm": entry.algorithm, "transport": entry.transport, "iteration": k,
                "ranks": n,
                "channels": entry.channels, "bytes": entry.size, "flows": int(members.sum()), "completed": done,
                "start_ps": start, "end_ps": end, "time_ps": time, "algbw_gbps": algbw,
                "busbw_gbps": algbw * bus_factor(entry.algorithm, n) if algbw is not None else None,
                # the latest end, the lowest rank among equals
                "slowest_rank": entry.hosts[int(np.argmax(rank_end))] if done else None,
            })
    return pl.DataFrame(rows, schema=_COLUMNS)
