"""``kind: collective`` traffic: expansion into a dependent TCP flow list, and the ``collectives`` table.

A collective of ``n`` ranks (``hosts``, in ring order) over ``size`` = S bytes
per rank becomes an explicit ``tcp_flows`` list whose flows wait for others
(``after``, ``compute``), NCCL-like:

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
- ``all_to_all``: rank r sends S/n bytes (chunk p of its buffer) to every
  other rank p, all at once.
- ``channels`` = C splits every transfer into C parallel rings of its own
  (each flow S/(nC) bytes); the channels of a rank advance independently.
- ``iterations``: rank r starts iteration k+1 ``compute`` after its part of
  iteration k is done (the last step's sends and receives of every channel).

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

from typing import Any, Optional

import polars as pl

__all__ = ["bus_factor", "collectives_table", "expand", "resolved_flows"]


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
    for k in range(entry.iterations):
        compute = entry.compute if k > 0 else 0
        if entry.algorithm == "all_to_all":
            ends: list[list[int]] = [[] for _ in range(n)]
            for c in range(channels):
                for r in range(n):
                    for offset in range(1, n):
                        p = (r + offset) % n
                        i = add(r, p, _part(_part(size, n, p), channels, c), list(boundary[r]), compute, k)
                        ends[r].append(i)
                        ends[p].append(i)
            boundary = [sorted(e) for e in ends]
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


def resolved_flows(scenario: Any, index: int) -> list[dict[str, Any]]:
    """The resolved ``tcp_flows`` list of collective entry ``index`` (its hosts checked first)."""
    from fabricsim.workloads import flowgen

    entry = scenario.traffic[index]
    flowgen._known(list(entry.hosts), flowgen.host_rates(scenario.topology), f"traffic[{index}].hosts", scenario)
    return expand(entry)[0]


_COLUMNS = {
    "name": pl.String, "algorithm": pl.String, "iteration": pl.UInt32, "ranks": pl.UInt32, "channels": pl.UInt32,
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
    rows: list[dict[str, Any]] = []
    for entry in entries:
        _, meta = expand(entry)
        frame = run.flows.filter(pl.col("name") == entry.name).sort("flow_id")
        if frame.height != len(meta):
            continue  # not the flows of this entry (a run cut short before they were built)
        starts = frame["start_ps"].to_list()
        fcts = frame["fct_ps"].to_list()
        sent = frame["packets_sent"].to_list()
        n = len(entry.hosts)
        by_iteration: dict[int, list[int]] = {}
        for j, (k, _, _) in enumerate(meta):
            by_iteration.setdefault(k, []).append(j)
        for k, members in sorted(by_iteration.items()):
            opened = [starts[j] for j in members if sent[j] > 0]
            done = all(fcts[j] is not None for j in members)
            start = min(opened) if opened else None
            end = max(starts[j] + fcts[j] for j in members) if done else None
            time = end - start if done and start is not None else None
            rank_end = [0] * n
            for j in members:
                if fcts[j] is not None:
                    _, src, dst = meta[j]
                    for r in (src, dst):
                        rank_end[r] = max(rank_end[r], starts[j] + fcts[j])
            algbw = entry.size * 8 / (time / 1e12) / 1e9 if time else None
            rows.append({
                "name": entry.name, "algorithm": entry.algorithm, "iteration": k, "ranks": n,
                "channels": entry.channels, "bytes": entry.size, "flows": len(members), "completed": done,
                "start_ps": start, "end_ps": end, "time_ps": time, "algbw_gbps": algbw,
                "busbw_gbps": algbw * bus_factor(entry.algorithm, n) if algbw is not None else None,
                "slowest_rank": entry.hosts[max(range(n), key=lambda r: (rank_end[r], -r))] if done else None,
            })
    return pl.DataFrame(rows, schema=_COLUMNS)
