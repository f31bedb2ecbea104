"""The page of a reproduction: one self-contained HTML file (inline SVG plots)
with the report's tables and figures, one series per device model, and the
words that say what the simulation shows."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import polars as pl

from fabricsim.outputs.report.html import banner, figure, html_page, html_table, write_plot_files
from fabricsim.outputs.report.plots import plain, pyplot, svg

__all__ = ["claim_rows", "claims_section", "claims_table", "line_figure", "para", "table", "test_section", "write_page", "finding"]


def claims_table(rows: Sequence[Any]) -> str:
    """The claims of one test: claim, conditions, the report's value, the simulated one
    (and the scale it was simulated at where it differs), their ratio, the verdict."""
    from fabricsim.reproductions.claims import conditions_text

    if not rows:
        return ""
    head = ("<tr><th>claim</th><th>conditions</th><th>report</th><th>simulated</th><th>sim / report</th>"
            "<th>verdict</th></tr>")
    body = []
    for r in rows:
        c = r.claim
        sim = html.escape(r.simulated_text())
        if r.simulated is not None and r.simulated.scale:
            sim += f'<br><span class="muted">{html.escape(r.simulated.scale)}</span>'
        if r.reason:
            sim += f'<span class="muted">{html.escape(r.reason)}</span>'
        if r.explanation:
            kind = "explained" if r.explained else "unexplained"
            sim += (f'<br><span class="{kind}"><b>Explanation, not a prediction</b>: '
                    f"{html.escape(r.explanation)}</span>")
        if r.ruled_out:
            sim += f'<br><span class="ruled-out"><b>Ruled out</b>: {html.escape(r.ruled_out)}</span>'
        ratio = f"{r.ratio:.3g}" if r.ratio is not None else ""
        cls = "v-" + r.verdict.replace(" ", "-")
        body.append(
            f'<tr><td><b>{html.escape(c.quantity)}</b><br><span class="muted">{html.escape(c.id)} · {c.kind}</span></td>'
            f"<td>{html.escape(conditions_text(c.conditions))}</td><td>{html.escape(c.report_text())}</td>"
            f'<td>{sim}</td><td>{ratio}</td><td><span class="verdict {cls}">{html.escape(r.verdict)}</span></td></tr>')
    return f'<table class="claims">{head}{"".join(body)}</table>'


def claims_section(rows: Sequence[Any], tests: Sequence[Any], assumptions: Sequence[Any] = ()) -> str:
    """Every claim of the report, test by test, with the counts per test and for the report."""
    from fabricsim.reproductions.claims import TOLERANCE, summary_line

    if not rows:
        return ""
    titles = {t.name: t.title for t in tests}
    order = [t.name for t in tests] + sorted({r.claim.test for r in rows if r.claim.test not in titles}, key=str)
    parts = [f"<p><b>Claims</b>: {html.escape(summary_line(rows))} judged claims of the report, by one rule: "
             "a stated claim matches when the simulation shows its direction; a measured or derived one when the "
             f"simulated value lies in the report's own spread, or within {TOLERANCE:.0%} of the report's value "
             "where it gives none; outside that, right in direction only or a miss. Every verdict below is "
             "computed from the numbers; claims the simulation cannot produce say why.</p>"]
    if assumptions:
        items = "".join(
            f"<li><b>{html.escape(a.name)}</b> ({html.escape(a.test)}: {html.escape(a.why)}): "
            + "; ".join(html.escape(text) for text, _ in a.space) + "</li>" for a in assumptions)
        parts.append("<p>For a claim the prediction misses, these documented spaces of assumptions are searched, "
                     "in order, for the nearest setting that reproduces it. An explanation is not a prediction: it "
                     "never changes a device model, and it is counted apart from the matches.</p>"
                     f"<ul>{items}</ul>")
    for name in order:
        mine = [r for r in rows if r.claim.test == name]
        if not mine:
            continue
        title = titles.get(name, "claims about the devices or the test bed as a whole" if name is None else name)
        parts.append(f"<h3>{html.escape(str(title))}: {html.escape(summary_line(mine))}</h3>{claims_table(mine)}")
    return '<section id="claims"><h2>The report\'s claims beside the simulation</h2>' + "".join(parts) + "</section>\n"


def para(*sentences: str) -> str:
    return "<p>" + html.escape(" ".join(sentences)) + "</p>"


def finding(text: str, agrees: bool) -> str:
    """A plain statement comparing the simulation with the report's claim."""
    word = "Agrees with the report" if agrees else "Disagrees with the report"
    cls = "banner" if agrees else "banner bad"
    return f'<div class="{cls}"><b>{word}.</b> {html.escape(text)}</div>'


def table(frame: Optional[pl.DataFrame], limit: int = 80) -> str:
    if frame is None or frame.height == 0:
        return '<p class="muted">no rows (the test did not run)</p>'
    shown = frame.with_columns(pl.col(pl.Float64).round_sig_figs(4)) if hasattr(pl.Expr, "round_sig_figs") else frame
    return html_table(shown, limit=limit)


def line_figure(
    name: str,
    frame: Optional[pl.DataFrame],
    x: str,
    y: str,
    *,
    series: Sequence[str] = ("device",),
    xlabel: str = "",
    ylabel: str = "",
    logx: bool = False,
    logy: bool = False,
    facet: Optional[str] = None,
    title: str = "",
) -> str:
    """A line plot of ``y`` against ``x``, one line per combination of ``series`` columns
    (one panel per value of ``facet``)."""
    if frame is None or frame.height == 0 or y not in frame.columns:
        return ""
    plt = pyplot()
    panels = [None] if facet is None else sorted(frame[facet].unique().to_list())
    # a panel without a value to draw is left out, not drawn as blank axes
    panels = [v for v in panels if v is None or frame.filter(pl.col(facet) == v)[y].drop_nulls().len()]
    if not panels:
        return ""
    width = 7.5 if len(panels) == 1 else min(4.2 * len(panels), 11)
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 3.4), squeeze=False)
    styles = ("-", "--", ":", "-.")
    markers = ("o", "s", "^", "D", "v", "x")
    for ax, value in zip(axes[0], panels):
        part = frame if value is None else frame.filter(pl.col(facet) == value)
        keys = [c for c in series if c in part.columns]
        groups = part.partition_by(keys, maintain_order=True, as_dict=True) if keys else {(): part}
        drawn: list[tuple[list[Any], list[Any], str]] = []
        for index, (key, g) in enumerate(groups.items()):
            g = g.sort(x)
            xs, ys = g[x].to_list(), g[y].to_list()
            values = key if isinstance(key, tuple) else (key,)
            # a number alone says nothing: name its column ("ports 2", not "2")
            label = " ".join(f"{c} {v}" if isinstance(v, (int, float)) else str(v) for c, v in zip(keys, values))
            same = next((other for xo, yo, other in drawn if xo == xs and yo == ys), None)
            if same is not None:
                label += f" (same values as {same})"
            ax.plot(xs, ys, linestyle=styles[index % len(styles)], marker=markers[index % len(markers)],
                    ms=4 if same is None else 7, fillstyle="full" if same is None else "none",
                    label=plain(label) or None)
            drawn.append((xs, ys, label))
        if logx:
            ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(plain(xlabel or x))
        ax.set_ylabel(plain(ylabel or y))
        ax.grid(alpha=0.3)
        if value is not None:
            ax.set_title(plain(f"{facet} = {value}"), fontsize=9)
        elif title:
            ax.set_title(plain(title), fontsize=9)
    if any(c in frame.columns for c in series):
        # one legend below the panels, never over the data
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=min(3, len(labels)),
                       bbox_to_anchor=(0.5, -0.02 - 0.06 * ((len(labels) - 1) // 3)), frameon=False)
    fig.tight_layout(rect=(0, 0.1 + 0.06 * ((len(axes[0][0].get_legend_handles_labels()[1]) - 1) // 3), 1, 1))
    return figure(name, svg(fig))


def details_table(summary: str, frame: Optional[pl.DataFrame]) -> str:
    if frame is None or frame.height == 0:
        return ""
    return f"<details><summary>{html.escape(summary)}</summary>{table(frame)}</details>"


def test_section(title: str, *parts: str) -> str:
    return f'<section><h2>{html.escape(title)}</h2>{"".join(p for p in parts if p)}</section>\n'


def claim_rows(report: Any, tables: dict[str, pl.DataFrame], full: bool,
               tests: Optional[Sequence[str]] = None,
               explanations: Optional[dict[tuple[str, int], dict[str, pl.DataFrame]]] = None) -> list[Any]:
    """Every claim of ``report`` evaluated against ``tables`` (empty for a report without claims),
    with the explanations the assumptions' tables give the claims the prediction misses."""
    from fabricsim.reproductions.claims import evaluate, explain, load_claims, rule_out

    if not report.claims:
        return []
    rows = evaluate(load_claims(report.name), report.claims, tables, full, tests)
    if explanations:
        rows = explain(rows, report.claims, report.assumptions, tables, explanations, full)
    return rule_out(rows, report.ruled_out)


def write_page(report: Any, tables: dict[str, pl.DataFrame], path: Path, *, full: bool = False,
               errors: Iterable[str] = (), tests: Optional[Sequence[str]] = None,
               explanations: Optional[dict[tuple[str, int], dict[str, pl.DataFrame]]] = None) -> Path:
    scale = ("the report's own scale (--full)" if full else
             "the default scale: reduced against the report as listed below (run with --full for the report's own sizes)")
    head = [f"<h1>{html.escape(report.title)}</h1>", para(report.summary),
            f"<p><b>Devices</b>: {html.escape(', '.join(report.devices))} (vendor-neutral models from public facts "
            "and stated assumptions: docs/models/devices.md; none is tuned to the report's outcome).</p>",
            f"<p><b>Scale</b>: {html.escape(scale)}.</p>"]
    if tests:
        head.append(para(f"Only these tests were run: {', '.join(tests)}."))
    if not full and report.reductions:
        head.append("<ul>" + "".join(f"<li>{html.escape(r)}</li>" for r in report.reductions) + "</ul>")
    head.append(banner(list(errors)[:20], title="Points that failed", bad=True))
    rows = claim_rows(report, tables, full, tests, explanations)
    head.append(claims_section(rows, report.tests, report.assumptions))
    try:
        body = report.render(tables, full)
    except Exception as exc:  # a page with what could be drawn beats no page
        body = f'<div class="section-error banner bad">page could not be drawn: {html.escape(str(exc))}</div>'
    files = "".join(f"<li>{html.escape(k.replace('/', '__'))}.parquet ({v.height} rows)</li>"
                    for k, v in sorted(tables.items()))
    foot = f"<h2>Tables</h2><p>Raw tables beside this page, as Parquet:</p><ul>{files}</ul>"
    page = html_page(report.title, "".join(head) + body + foot)
    path = Path(path)
    path.write_text(page, encoding="utf-8")
    write_plot_files(page, path.parent / "plots")
    return path
