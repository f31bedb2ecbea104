"""Summary table (``sweep.parquet``) and self-contained HTML report of a sweep.

The report plots, against one grid parameter (``x``: ``load`` when swept,
else the first grid path), one series per value of the other grid parameters
(``series``), each point the mean over repeats of finished runs, with a bar
from the smallest to the largest repeat when there are several:

- mean and p99 FCT (and slowdown) of all counted flows, and per size bucket;
- flows per size bucket, and the spread of the main figures over repeats
  (mean, standard deviation, min, max; tables);
- the largest buffer high-water mark of any switch, drops.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any, Optional, Sequence

import polars as pl

from fabricsim.outputs.report.html import banner, figure, html_page, html_table, write_plot_files
from fabricsim.outputs.report.plots import plain, pyplot, svg
from fabricsim.sweeps.catalog import bucket_slug, metric_type
from fabricsim.workloads.cdf import BUCKET_EDGES, bucket_labels

__all__ = ["summary_table", "write_report", "render_sweep_html"]

_FIRST = ["point_id", "repeat", "seed", "status", "error"]


def summary_table(rows: Sequence[dict[str, Any]], paths: Sequence[str]) -> pl.DataFrame:
    """One row per point: grid parameters, repeat, seed, status, error, metrics, output paths."""
    records = []
    metric_names: dict[str, None] = {}
    for row in rows:
        metrics = json.loads(row.get("metrics") or "{}")
        metric_names.update(dict.fromkeys(metrics))
        record = {name: row.get(name) for name in _FIRST}
        record.update({path: row.get(path) for path in paths})
        record.update(metrics)
        record["out_dir"] = row.get("out_dir")
        record["files"] = row.get("files")
        records.append(record)
    schema: dict[str, Any] = {"point_id": pl.String, "repeat": pl.Int64, "seed": pl.UInt64, "status": pl.String,
                              "error": pl.String}
    schema.update({path: pl.String for path in paths})
    kinds = {"BOOLEAN": pl.Boolean, "BIGINT": pl.Int64, "DOUBLE": pl.Float64}
    schema.update({name: kinds[metric_type(name)] for name in metric_names})
    schema.update({"out_dir": pl.String, "files": pl.String})
    return pl.DataFrame(records, schema=schema, strict=False)


def _order_key(value: str) -> tuple[int, float, str]:
    match = re.match(r"^\s*([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", value)
    return (0, float(match.group(1)), value) if match else (1, 0.0, value)


def _axes(table: pl.DataFrame, paths: Sequence[str], x: Optional[str], series: Optional[str]) -> tuple[str, list[str]]:
    if not paths:
        return "", []
    x = x or ("load" if "load" in paths else paths[0])
    if x not in paths:
        raise ValueError(f"x {x!r} is not a grid path ({', '.join(paths)})")
    others = [series] if series else [p for p in paths if p != x]
    return x, [p for p in others if p in paths and p != x]


def _bucket_slugs() -> list[tuple[str, str]]:
    return [(label, bucket_slug(label)) for label in [*bucket_labels(BUCKET_EDGES), "all"]]


def _aggregate(table: pl.DataFrame, x: str, group: list[str]) -> pl.DataFrame:
    """Per (x, series) point: the mean of every numeric metric over repeats, and
    its spread as ``<metric>__std``, ``__min``, ``__max``; ``runs`` counts repeats."""
    done = table.filter(pl.col("status") == "done")
    numeric = [c for c, t in done.schema.items() if t.is_numeric() and c not in ("repeat", "seed")]
    keys = [x, *group]
    spread = [
        expr
        for c in numeric
        for expr in (
            pl.col(c).std().alias(f"{c}__std"),
            pl.col(c).min().alias(f"{c}__min"),
            pl.col(c).max().alias(f"{c}__max"),
        )
    ]
    return done.group_by(keys).agg([pl.col(c).mean() for c in numeric] + spread + [pl.len().alias("runs")])


def _spread_table(agg: pl.DataFrame, x: str, group: list[str], metrics: list[tuple[str, str, float]]) -> str:
    """``mean ± sd [min, max] (runs)`` of each metric per point, scaled for reading."""
    present = [(c, label, scale) for c, label, scale in metrics if c in agg.columns]
    if not present:
        return ""
    rows = []
    for row in agg.sort([x, *group]).iter_rows(named=True):
        record = {x: str(row[x]), **{g: str(row[g]) for g in group}, "runs": row["runs"]}
        for c, label, scale in present:
            mean = row[c]
            if mean is None:
                record[label] = "–"
                continue
            sd = row.get(f"{c}__std")
            lo, hi = row.get(f"{c}__min"), row.get(f"{c}__max")
            text = f"{mean / scale:.4g}"
            if row["runs"] > 1 and sd is not None:
                text += f" ± {sd / scale:.2g} [{lo / scale:.4g}, {hi / scale:.4g}]"
            record[label] = text
        rows.append(record)
    return html_table(pl.DataFrame(rows), limit=500)


def _line_plots(agg: pl.DataFrame, x: str, group: list[str], panels: list[tuple[str, str, float]],
                ylabel: str, title: str, log: bool = False) -> str:
    plt = pyplot()
    xs = sorted({str(v) for v in agg[x].to_list()}, key=_order_key)
    position = {v: i for i, v in enumerate(xs)}
    labels = sorted({tuple(str(r[g]) for g in group) for r in agg.iter_rows(named=True)}) if group else [()]
    cols = min(len(panels), 3)
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for k, (column, panel_title, scale) in enumerate(panels):
        ax = axes[k // cols][k % cols]
        for label in labels:
            part = agg
            for g, v in zip(group, label):
                part = part.filter(pl.col(g).cast(pl.String) == v)
            if column not in part.columns:
                continue
            lows = part[f"{column}__min"].to_list() if f"{column}__min" in part.columns else [None] * part.height
            highs = part[f"{column}__max"].to_list() if f"{column}__max" in part.columns else [None] * part.height
            points = sorted(
                (position[str(a)], b, lo, hi)
                for a, b, lo, hi in zip(part[x].to_list(), part[column].to_list(), lows, highs)
                if b is not None
            )
            if not points:
                continue
            name = ", ".join(f"{g}={v}" for g, v in zip(group, label)) or "all points"
            xs_ = [p[0] for p in points]
            ys_ = [p[1] / scale for p in points]
            if any(p[2] is not None and p[3] is not None and p[3] > p[2] for p in points):
                below = [max(0.0, (p[1] - (p[2] if p[2] is not None else p[1])) / scale) for p in points]
                above = [max(0.0, ((p[3] if p[3] is not None else p[1]) - p[1]) / scale) for p in points]
                ax.errorbar(xs_, ys_, yerr=[below, above], marker="o", capsize=3, label=plain(name))
            else:
                ax.plot(xs_, ys_, marker="o", label=plain(name))
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([plain(v) for v in xs], rotation=30 if max(map(len, xs)) > 6 else 0)
        ax.set_xlabel(plain(x))
        ax.set_ylabel(ylabel)
        ax.set_title(panel_title, fontsize=10)
        if log and ax.has_data():
            ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
    for k in range(len(panels), rows * cols):
        axes[k // cols][k % cols].axis("off")
    handles, names = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="lower center", ncol=min(len(names), 3), fontsize=8,
                   bbox_to_anchor=(0.5, -0.02 - 0.03 * ((len(names) - 1) // 3)))
    fig.suptitle(plain(title))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return figure(re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-"), svg(fig))


def render_sweep_html(table: pl.DataFrame, paths: Sequence[str], *, x: Optional[str] = None,
                      series: Optional[str] = None, title: str = "sweep") -> str:
    """The sweep report as one HTML string."""
    x, group = _axes(table, paths, x, series)
    total = table.height
    done = table.filter(pl.col("status") == "done").height
    failed = table.filter(pl.col("status") == "failed")
    sections = [f"<h1>{html.escape(title)}</h1>",
                f"<p>{done} of {total} points done, {failed.height} failed; grid: "
                f"{html.escape(', '.join(paths) or '(none)')}; x axis: {html.escape(x or '-')}; series: "
                f"{html.escape(', '.join(group) or '-')}. Each plotted value is the mean over repeats; the bars "
                "span the smallest to the largest repeat.</p>"]
    if "drain_limit_reached" in table.columns:
        cut = table.filter(pl.col("drain_limit_reached").fill_null(False))
        if cut.height:
            names = ", ".join(cut["point_id"].to_list()[:10]) + (" ..." if cut.height > 10 else "")
            sections.append(banner(
                [f"{cut.height} point(s) stopped at their drain limit with flows unfinished ({names}): their FCT "
                 "statistics leave those flows out. Raise drain_limit."],
                "Warnings: read these before the results"))
    if x and done:
        agg = _aggregate(table, x, group)
        slugs = _bucket_slugs()
        fct_panels = [(f"fct_{slug}_mean_ps", f"{label} flows", 1e6) for label, slug in slugs
                      if f"fct_{slug}_mean_ps" in agg.columns]
        if fct_panels:
            sections.append("<h2>Average flow completion time</h2>")
            sections.append(_line_plots(agg, x, group, fct_panels, "mean FCT (us)", "Mean FCT by flow size", log=True))
            p99_panels = [(f"fct_{slug}_p99_ps", f"{label} flows", 1e6) for label, slug in slugs
                          if f"fct_{slug}_p99_ps" in agg.columns]
            sections.append(_line_plots(agg, x, group, p99_panels, "p99 FCT (us)", "p99 FCT by flow size", log=True))
            slow_panels = [(f"fct_{slug}_mean_slowdown", f"{label} flows", 1.0) for label, slug in slugs
                           if f"fct_{slug}_mean_slowdown" in agg.columns]
            sections.append(_line_plots(agg, x, group, slow_panels, "mean slowdown", "Mean FCT slowdown by flow size",
                                        log=True))
            counts = [f"fct_{slug}_count" for _, slug in slugs if f"fct_{slug}_count" in agg.columns]
            shown = agg.select([x, *group, "runs", *counts]).sort([x, *group])
            shown = shown.rename({f"fct_{slug}_count": f"flows {label}" for label, slug in slugs
                                  if f"fct_{slug}_count" in counts})
            sections.append("<h2>Flows per size bucket (mean per run)</h2>" + html_table(shown, limit=500))
            spread = [(f"fct_{slug}_{stat}_ps", f"{stat} FCT {label} (ms)", 1e9) for label, slug in slugs
                      for stat in ("mean", "p99")]
            sections.append("<h2>Spread over repeats</h2><p class=\"muted\">mean ± standard deviation "
                            "[smallest, largest] over the repeats of each point</p>"
                            + _spread_table(agg, x, group, spread))
        if "max_buffer_bytes" in agg.columns and agg["max_buffer_bytes"].drop_nulls().len():
            sections.append("<h2>Buffer</h2>")
            sections.append(_line_plots(agg, x, group, [("max_buffer_bytes", "largest switch buffer high-water mark",
                                                         1e6)], "MB", "Max buffer used"))
        if "packets_dropped" in agg.columns:
            sections.append(_line_plots(agg, x, group, [("packets_dropped", "packets dropped", 1.0)], "packets",
                                        "Drops"))
    if failed.height:
        sections.append("<h2>Failed points</h2>" + html_table(failed.select([*paths, "seed", "error"])))
    keep = [c for c in ["point_id", *paths, "repeat", "seed", "status", "flows_total", "flows_completed",
                        "flows_incomplete", "drain_limit_reached",
                        "packets_dropped", "max_buffer_bytes", "fct_all_mean_ps", "fct_all_p99_ps"]
            if c in table.columns]
    sections.append("<h2>Points</h2>" + html_table(table.select(keep), limit=1000))
    return html_page(title, "\n".join(sections))


def write_report(table: pl.DataFrame, paths: Sequence[str], path: str | Path, *, x: Optional[str] = None,
                 series: Optional[str] = None, title: str = "sweep") -> Path:
    """Write the sweep report to ``path`` and return it."""
    out = Path(path)
    page = render_sweep_html(table, paths, x=x, series=series, title=title)
    out.write_text(page, encoding="utf-8")
    write_plot_files(page, out.parent / "plots")
    return out
