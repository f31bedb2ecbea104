"""Per-source shares of what each host received: the derived ``source_shares`` table.

For every host that received from two or more source hosts, each source's
``share`` of the bytes delivered to it (flow bytes: the inner frames, tunnel
headers left out), with the host's ``sources``, smallest and largest share and
Jain's fairness index ``(sum x)^2 / (n sum x^2)`` on every row. This is the
per-source share of an output port in a fan-in test whatever the switch's
arbitration; the core's ``arbitration`` and ``fairness`` tables give the same
per egress port and input of switches with input arbitration.
"""

from __future__ import annotations

import polars as pl

from fabricsim.outputs.tables import RunTables

__all__ = ["hierarchical_shares", "jain", "max_min", "source_shares"]


def jain(shares: list[float]) -> float:
    """Jain's index of ``shares``: 1 when all are equal, 1/n when one takes all."""
    total = sum(shares)
    squares = sum(x * x for x in shares)
    if not shares or squares == 0:
        return 1.0
    return total * total / (len(shares) * squares)


def max_min(demands: list[float], capacity: float) -> list[float]:
    """Max-min fair allocation of ``capacity`` among ``demands`` (water filling):
    what round robin between backlogged inputs gives."""
    alloc = [0.0] * len(demands)
    open_ = [i for i, d in enumerate(demands) if d > 0]
    left = capacity
    while open_ and left > 0:
        fair = left / len(open_)
        small = [i for i in open_ if demands[i] - alloc[i] <= fair]
        if not small:
            for i in open_:
                alloc[i] += fair
            break
        for i in small:
            left -= demands[i] - alloc[i]
            alloc[i] = demands[i]
        open_ = [i for i in open_ if i not in small]
    return alloc


def hierarchical_shares(demands: list[float], group: list[int], capacity: float) -> list[float]:
    """Two-level max-min allocation, as hierarchical round robin gives: groups
    by their total demand, then the inputs of each group."""
    groups = sorted(set(group))
    totals = [sum(d for d, g in zip(demands, group) if g == k) for k in groups]
    out = [0.0] * len(demands)
    for k, cap in zip(groups, max_min(totals, capacity)):
        members = [i for i, g in enumerate(group) if g == k]
        for i, a in zip(members, max_min([demands[i] for i in members], cap)):
            out[i] = a
    return out


def source_shares(result: RunTables) -> pl.DataFrame:
    """The ``source_shares`` table of a run (empty when no host received from two sources)."""
    flows = result.flows
    if flows.height == 0 or "bytes_delivered" not in flows.columns:
        return pl.DataFrame()
    # Sorted before the per-receiver sums of shares: group_by hands groups back in
    # no fixed order, and floating-point sums in another order differ in the last bits.
    per = (
        flows.group_by(["dst", "src"])
        .agg(pl.len().cast(pl.UInt32).alias("flows"), pl.col("bytes_delivered").sum().alias("bytes"))
        .filter(pl.col("bytes") > 0)
        .sort(["dst", "src"])
    )
    per = per.with_columns(
        pl.len().over("dst").cast(pl.UInt32).alias("sources"),
        (pl.col("bytes") / pl.col("bytes").sum().over("dst")).alias("share"),
    ).filter(pl.col("sources") >= 2)
    if per.height == 0:
        return pl.DataFrame()
    per = per.with_columns(
        pl.col("share").min().over("dst").alias("share_min"),
        pl.col("share").max().over("dst").alias("share_max"),
        (pl.col("share").sum().over("dst") ** 2 / (pl.col("sources") * (pl.col("share") ** 2).sum().over("dst"))).alias(
            "jain"
        ),
    )
    return per.select("dst", "src", "flows", "bytes", "share", "sources", "share_min", "share_max", "jain").sort(
        ["dst", "src"]
    )
