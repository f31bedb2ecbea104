"""Derived latency tables of a run: one-way latency per traffic class from
the per-flow latency histograms (``latency_hist``) and the flows' exact
bounds, for the run report and for callers of :class:`fabricsim.Result`."""

from __future__ import annotations

import numpy as np
import polars as pl

from fabricsim.outputs.tables import RunTables

__all__ = ["class_latency"]


def class_latency(result: RunTables) -> pl.DataFrame:
    """One-way latency per traffic class from the per-flow histograms
    (``latency_hist``): packets, min, p50, p99, p99.9, max (ps). A quantile is
    the middle of its histogram bucket (buckets are at most 1/32 of their lower
    bound wide), clamped to the class's exact min and max."""
    hist = result.tables().get("latency_hist", pl.DataFrame())
    flows = result.flows
    if hist.height == 0 or "latency_min_ps" not in flows.columns:
        return pl.DataFrame()
    # "What matters" and the latency section both ask.
    return result.memo("_class_latency", (hist, flows), lambda: _class_latency(hist, flows))


def _class_latency(hist: pl.DataFrame, flows: pl.DataFrame) -> pl.DataFrame:
    bounds = (
        flows.filter(pl.col("latency_min_ps").is_not_null())
        .group_by("class")
        .agg(pl.col("latency_min_ps").min().alias("min"), pl.col("latency_max_ps").max().alias("max"))
    )
    agg = hist.group_by("class", "low_ps", "high_ps").agg(pl.col("packets").sum()).sort("class", "low_ps")
    rows = []
    for (cls,), part in agg.group_by("class", maintain_order=True):
        b = bounds.filter(pl.col("class") == cls)
        lo_hi = (int(b["min"][0]), int(b["max"][0])) if b.height else (0, 2**62)
        counts = part["packets"].to_numpy()
        cum = np.cumsum(counts)
        total = int(cum[-1])
        mids = (part["low_ps"].to_numpy() + (part["high_ps"].to_numpy() - part["low_ps"].to_numpy() - 1) // 2)
        row = {"class": int(cls), "packets": total, "min_ps": lo_hi[0]}
        for name, q in (("p50_ps", 0.5), ("p99_ps", 0.99), ("p999_ps", 0.999)):
            rank = min(max(int(np.ceil(q * total)), 1), total)
            k = int(np.searchsorted(cum, rank, side="left"))
            row[name] = int(min(max(int(mids[k]), lo_hi[0]), lo_hi[1]))
        row["max_ps"] = lo_hi[1]
        rows.append(row)
    return pl.DataFrame(rows).sort("class")
