"""The page of :mod:`fabricsim.experiments.ai_fabric`: the results table, a timeline of every collective's
iterations and their times, the background flows' FCT, buffer peaks, PFC, drops and retransmissions.

Only presents what the experiment measured (editing it reruns no point of a resumed experiment).
"""

from __future__ import annotations

import html
from typing import Any, Optional, Sequence

import polars as pl

from fabricsim.schema import Scenario

__all__ = ["render_page"]


def _point_label(row: dict[str, Any]) -> str:
    return f"{row['load_balancing']}, {'no failure' if row['failure'] == 'none' else 'link down'}"


def _text(value: Any) -> str:
    """A text cell as it is (the table escapes it)."""
    return "–" if value is None else str(value)


def _short(failure: Any) -> str:
    """A failure label without its times (the page says them once)."""
    return "–" if failure is None else str(failure).split(" at ")[0]


def _gbps(value: Any) -> str:
    from fabricsim.outputs.report.html import fmt_rate

    return fmt_rate(None if value is None else float(value) * 1e9)


def _timeline(table: pl.DataFrame, its: pl.DataFrame, labels: dict[str, str]) -> str:
    """Per point and algorithm, a bar from the start to the end of each iteration."""
    from fabricsim.outputs.report.html import figure
    from fabricsim.outputs.report.plots import plain, pyplot, svg, time_unit

    algorithms = list(labels)
    groups = its.filter(pl.col("algorithm").is_in(algorithms) & pl.col("collective").is_in(list(labels.values())))
    ends = groups["end_ps"].drop_nulls()
    if groups.height == 0 or ends.len() == 0:
        return ""
    scale, unit = time_unit(float(ends.max()))
    lanes = [(row, a) for row in table.iter_rows(named=True) for a in algorithms]
    fig, ax = pyplot().subplots(figsize=(10, 0.36 * len(lanes) + 1.4))
    colors = {a: c for a, c in zip(algorithms, ("#3a6ea5", "#d9822b", "#5a9e48", "#9a4fa0"))}
    count = int(groups["iteration"].max()) + 1
    height = 0.8 / count  # iterations overlap in time (each rank starts its next one on its own): one sub-lane each
    labelled: set[str] = set()
    for y, (row, algorithm) in enumerate(reversed(lanes)):
        mine = groups.filter((pl.col("load_balancing") == row["load_balancing"]) & (pl.col("failure") == row["failure"])
                             & (pl.col("algorithm") == algorithm)).sort("iteration")
        for it in mine.iter_rows(named=True):
            if it["start_ps"] is None or it["end_ps"] is None:
                continue
            label = None if algorithm in labelled else labels[algorithm]
            labelled.add(algorithm)
            ax.barh(y + 0.4 - height * (it["iteration"] + 0.5), (it["end_ps"] - it["start_ps"]) / scale,
                    left=it["start_ps"] / scale, height=height * 0.9, color=colors[algorithm],
                    alpha=1.0 - 0.5 * it["iteration"] / max(1, count - 1), label=label)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([plain(f"{_point_label(row)}: {labels[a]}") for row, a in reversed(lanes)], fontsize=7)
    ax.set_xlim(left=0)
    ax.set_xlabel(f"time ({unit})")
    ax.set_title("Iterations of each collective, first flow start to last flow end (top to bottom: iteration 0, 1, ...)")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    return figure("ai_fabric_timeline", svg(fig))


def _fct_cdf(cdfs: list[tuple[dict[str, str], Optional[dict[str, Any]]]], name: str, slug: str) -> str:
    from fabricsim.outputs.report.html import figure
    from fabricsim.outputs.report.plots import cdf_points, log_scale, plain, pyplot, svg

    fig, ax = pyplot().subplots(figsize=(10, 3.8))
    drawn = 0
    modes = list(dict.fromkeys(labels["load_balancing"] for labels, _ in cdfs))
    for labels, cdf in cdfs:
        values = (cdf or {}).get(name)
        if values is None or len(values) == 0:
            continue
        x, y = cdf_points(values)
        ax.step(x / 1e6, y, where="post", color=f"C{modes.index(labels['load_balancing']) % 10}",
                linestyle="-" if labels["failure"] == "none" else ":", label=plain(_point_label(labels)))
        drawn += 1
    if not drawn:
        pyplot().close(fig)
        return ""
    log_scale(ax, "x")
    ax.set_ylim(0, 1)
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of flows")
    ax.set_title(plain(f"FCT of the {name} flows (dotted: with the failed link)"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return figure(f"ai_fabric_fct_{slug}", svg(fig))


_TRANSPORT = {"tcp": "TCP", "roce": "RoCEv2"}


def _transports(sc: Scenario, labels: dict[str, str]) -> str:
    """What each algorithm's collectives run over: "all-reduce over RoCEv2; ..."."""
    out = []
    for algorithm, label in labels.items():
        used = sorted({t.transport for t in sc.traffic if t.kind == "collective" and t.algorithm == algorithm})
        out.append(f"{label} over {' and '.join(_TRANSPORT.get(u, u) for u in used)}")
    return "; ".join(out)


def render_page(
    table: pl.DataFrame,
    its: pl.DataFrame,
    cdfs: list[tuple[dict[str, str], Optional[dict[str, Any]]]],
    details: list[dict[str, Any]],
    sc: Scenario,
    labels: dict[str, str],
    background: Sequence[tuple[str, str]],
    modes: Sequence[str],
    failures: dict[str, str],
    overrides: Sequence[str] = (),
) -> str:
    """The experiment's self-contained page: ``table`` and ``its`` as written, ``cdfs`` the background flows'
    FCTs of each point, ``details`` its buffer peaks and drop sites; ``labels`` the collective algorithms of the
    scenario with their names in ``its``, ``background`` its background entries with their column slugs."""
    from fabricsim.outputs.report.html import (
        Col, banner, fmt, fmt_bytes, fmt_count, fmt_time, html_page, human_table, section,
    )

    algorithms = list(labels)
    title = f"{sc.name}: load balancing and a failed link"
    failed_label = [label for value, label in failures.items() if value != "[]"][0]
    body = [f"<h1>{html.escape(title)}</h1>"]
    if sc.description:
        body.append(f'<p class="muted">{html.escape(sc.description)}</p>')
    body.append(
        "<p>" + html.escape(
            f"{table.height} runs: network.switch.load_balancing in {{{', '.join(modes)}}} x failures in "
            f"{{none, {failed_label}}}, seed {sc.seed}"
            + (f", with {' '.join(overrides)}" if overrides else "") + ". Method and definitions: "
            "docs/models/ai-fabric.md; each run's own tables are in points/<point_id>/.") + "</p>")

    problems = []
    for row in table.iter_rows(named=True):
        label = _point_label(row)
        if row["status"] != "done":
            problems.append(f"{label}: the run failed: {row['error']}")
            continue
        if not row["conservation_ok"]:
            problems.append(f"{label}: packet conservation failed")
        if not row["buffer_accounting_ok"]:
            problems.append(f"{label}: buffer accounting failed")
        if not row["collectives_completed"]:
            problems.append(f"{label}: a collective did not complete (iteration times are missing)")
        if row["drain_limit_reached"]:
            problems.append(f"{label}: the run stopped at its drain limit with flows unfinished")
    body.append(banner(problems, title="Problems", bad=True))

    ms = fmt_time
    cols = [Col("load balancing", "load_balancing", _text), Col("failure", "failure", _short),
            Col("job time", "job_time_ps", ms), Col("slowest iteration", "iteration_time_max_ps", ms)]
    for a in algorithms:
        cols += [Col(f"{labels[a]}, slowest", f"{a}_time_max_ps", ms),
                 Col(f"{labels[a]} bus bw, lowest", f"{a}_busbw_min_gbps", _gbps)]
    for name, slug in background:
        cols += [Col(f"{name} p99 FCT", f"{slug}_p99_fct_ps", ms)]
    cols += [Col("buffer peak", "buffer_peak_bytes", fmt_bytes), Col("PFC pauses", "pfc_pause_frames", fmt_count),
             Col("drops", "packets_dropped", fmt_count)]
    if "packets_trimmed" in table.columns and (table["packets_trimmed"].fill_null(0) > 0).any():
        # Switches with trimming (docs/models/trimming.md): headers forwarded instead of drops.
        cols += [Col("trimmed", "packets_trimmed", fmt_count)]
    cols += [Col("RTOs", "timeouts", fmt_count),
             Col("checks", "conservation_ok",
                 lambda v: "–" if v is None else ("ok" if v else "FAILED"))]
    checks = table.with_columns(
        (pl.col("conservation_ok") & pl.col("buffer_accounting_ok")).alias("conservation_ok"))
    body.append(section("Results", "<p>" + html.escape(
        "Job time: first flow start to last flow end of all collectives. Slowest iteration: the longest training "
        "iteration, from the first start to the last end of iteration k of every collective. Per algorithm (its "
        "entries together, e.g. one ring per rail): the slowest entry's time in its slowest iteration, and the "
        "lowest bus bandwidth (NCCL's busbw) of any iteration. Background FCT: the fct table's p99 over the "
        "entry's flows. Buffer peak: the largest high-water mark of any switch. "
        + ("Trimmed: data packets the switches cut to their header instead of dropping them. "
           if any(c.source == "packets_trimmed" for c in cols) else "")
        + "RTOs: retransmission timeouts of all TCP flows and RoCE queue pairs. Checks: packet conservation and "
        "buffer accounting. Transports: "
        f"{_transports(sc, labels)}.") + "</p>" + human_table(checks, cols)))

    shown = [*labels.values(), "training iteration"]
    groups = its.filter(pl.col("collective").is_in(shown))
    count = int(groups["iteration"].max()) + 1 if groups.height else 0
    wide = []
    for row in table.iter_rows(named=True):
        for name in shown:
            mine = groups.filter((pl.col("load_balancing") == row["load_balancing"])
                                 & (pl.col("failure") == row["failure"]) & (pl.col("collective") == name))
            if not mine.height:
                continue
            record: dict[str, Any] = {"load_balancing": row["load_balancing"], "failure": row["failure"],
                                      "collective": name}
            for it in mine.iter_rows(named=True):
                record[f"time_{it['iteration']}"] = it["time_ps"]
                record[f"busbw_{it['iteration']}"] = it["busbw_gbps"]
            wide.append(record)
    iteration_cols = [Col("load balancing", "load_balancing", _text), Col("failure", "failure", _short), Col("", "collective", _text)]
    for k in range(count):
        iteration_cols += [Col(f"iteration {k}", f"time_{k}", ms), Col("bus bw", f"busbw_{k}", _gbps)]
    body.append(section("Iterations", _timeline(table, its, labels) + "<p>" + html.escape(
        "Time of each iteration: per algorithm the slowest entry's, first flow start to last flow end; a training "
        "iteration from the first start to the last end of iteration k of every collective. Bus bandwidth of the "
        "slowest entry.") + "</p>" + human_table(
        pl.DataFrame(wide, infer_schema_length=None) if wide else pl.DataFrame(), iteration_cols, limit=1000)
        + '<p class="muted">Per entry, with start and end times: ai_fabric_iterations.parquet.</p>'))

    for name, slug in background:
        body.append(section(f"Background traffic: {name}", _fct_cdf(cdfs, name, slug) + human_table(table, [
            Col("load balancing", "load_balancing", _text), Col("failure", "failure", _short),
            Col("flows", f"{slug}_flows", fmt_count), Col("median FCT", f"{slug}_p50_fct_ps", ms),
            Col("p99 FCT", f"{slug}_p99_fct_ps", ms), Col("p99 slowdown", f"{slug}_p99_slowdown", fmt)])))

    peaks = [{"load_balancing": r["load_balancing"], "failure": r["failure"], **p}
             for r, d in zip(table.iter_rows(named=True), details) for p in d.get("buffer_peaks", [])]
    body.append(section("Buffers and PFC", "<p>" + html.escape(
        "The three switches with the highest buffer high-water mark in each run.") + "</p>" + human_table(
        pl.DataFrame(peaks) if peaks else pl.DataFrame(),
        [Col("load balancing", "load_balancing", _text), Col("failure", "failure", _short), Col("switch", "node", _text),
         Col("high water", "high_water_bytes", fmt_bytes)], limit=1000)
        + (human_table(table, [Col("load balancing", "load_balancing", _text), Col("failure", "failure", _short),
                               Col("PFC pause frames", "pfc_pause_frames", fmt_count),
                               Col("paused time", "pfc_paused_ps", ms)])
           if (table["pfc_pause_frames"].fill_null(0) > 0).any()
           else '<p class="muted">No PFC pause frame in any run.</p>')))

    reasons = [c for c in table.columns if c.startswith("drops_")]
    sites = [{"load_balancing": r["load_balancing"], "failure": r["failure"], **s}
             for r, d in zip(table.iter_rows(named=True), details) for s in d.get("drop_sites", [])]
    body.append(section("Drops by reason", "<p>" + html.escape(
        "Packets dropped per reason, and the TCP senders' retransmissions (spurious: reported by a D-SACK, the "
        "segment had arrived), retransmission timeouts and the packets the receivers got out of order.")
        + "</p>" + human_table(table, [
        Col("load balancing", "load_balancing", _text), Col("failure", "failure", _short),
        *(Col(c.removeprefix("drops_"), c, fmt_count) for c in reasons),
        Col("retransmissions", "retransmits", fmt_count), Col("spurious", "spurious_retransmits", fmt_count),
        Col("RTOs", "timeouts", fmt_count), Col("packets reordered", "reordered_packets", fmt_count)])
        + (human_table(pl.DataFrame(sites), [
            Col("load balancing", "load_balancing", _text), Col("failure", "failure", _short), Col("reason", "reason", _text),
            Col("where (the receiving port)", "where", _text), Col("packets", "packets", fmt_count)], limit=1000)
           if sites else "")))
    return html_page(title, "\n".join(b for b in body if b))
