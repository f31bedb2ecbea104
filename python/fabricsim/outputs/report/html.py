"""Pieces of the self-contained HTML pages (run and sweep reports): style, values, tables, cards, plots."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Iterable

import polars as pl

__all__ = [
    "CSS",
    "Col",
    "banner",
    "cards",
    "details",
    "figure",
    "fmt",
    "fmt_bytes",
    "fmt_count",
    "fmt_pct",
    "fmt_rate",
    "fmt_time",
    "html_page",
    "html_table",
    "human_table",
    "section",
    "write_plot_files",
]

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
h1{margin-bottom:.2rem} h2{margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0;display:block;max-width:100%;overflow-x:auto}
table.claims{display:table}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right} th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
.ok{color:#127a1f;font-weight:600} .bad{color:#b00020;font-weight:600} .muted{color:#666}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(220px,1fr));gap:.5rem}
.card{border:1px solid #ddd;border-radius:6px;padding:.6rem} .card b{font-size:1.3rem;display:block}
.banner{background:#fff4e5;border:2px solid #e08a00;border-radius:6px;padding:.6rem 1rem;margin:1rem 0}
.banner.bad{background:#fdecee;border-color:#b00020} .banner b{display:block;margin-bottom:.3rem}
details{margin:.5rem 0} summary{cursor:pointer;color:#3a5a9a}
dl.sim{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;font-size:.9rem}
dl.sim dt{font-weight:600} dl.sim dd{margin:0}
ul.matters li{margin:.2rem 0}
table.claims{table-layout:fixed;width:100%} table.claims td,table.claims th{text-align:left;vertical-align:top;overflow-wrap:anywhere}
table.claims th:nth-child(1){width:25%} table.claims th:nth-child(2){width:16%} table.claims th:nth-child(3){width:12%}
table.claims th:nth-child(4){width:31%} table.claims th:nth-child(5){width:7%} table.claims th:nth-child(6){width:9%}
.verdict{display:inline-block;padding:.05rem .4rem;border-radius:3px;font-size:.8rem;white-space:nowrap}
.v-matches{background:#e3f4e6;color:#0d5c18} .v-direction-only{background:#eef0f7;color:#33437a}
.explained{color:#0d5c18} .unexplained{color:#555} .ruled-out{color:#555}
.v-misses{background:#f1e4f5;color:#5e1f73} .v-not-run,.v-not-simulated{background:#f0f0f0;color:#555}
"""


def fmt(value: Any) -> str:
    """A value as table-cell text: thousands separators, 4 significant digits, ``–`` for none."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:  # NaN
            return "–"
        # one format per magnitude, never an exponent beside plain numbers in a column
        # (9.615e+05 beside 14,880,000): whole numbers from 1,000 up, 4 significant digits below
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if value != 0 and abs(value) < 1e-3:
            return f"{value:.3e}"
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return html.escape(str(value))


def _sig(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, without exponent for usual magnitudes."""
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" in text:
        return f"{value:,.0f}" if abs(value) >= 1 else text
    return text


def fmt_time(ps: Any) -> str:
    """Picoseconds in a readable unit: ``5.01 ms``, ``12.3 us``, ``850 ns``."""
    if ps is None or (isinstance(ps, float) and ps != ps):
        return "–"
    value = float(ps)
    for scale, unit in ((1e12, "s"), (1e9, "ms"), (1e6, "us"), (1e3, "ns")):
        if abs(value) >= scale:
            return f"{_sig(value / scale)} {unit}"
    return f"{_sig(value)} ps"


def fmt_bytes(n: Any) -> str:
    """Bytes in decimal units: ``1.23 MB``, ``512 B``."""
    if n is None or (isinstance(n, float) and n != n):
        return "–"
    value = float(n)
    for scale, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if abs(value) >= scale:
            return f"{_sig(value / scale)} {unit}"
    return f"{value:,.0f} B"


def fmt_rate(bps: Any) -> str:
    """Bit/s in a readable unit: ``9.41 Gb/s``."""
    if bps is None or (isinstance(bps, float) and bps != bps):
        return "–"
    value = float(bps)
    for scale, unit in ((1e12, "Tb/s"), (1e9, "Gb/s"), (1e6, "Mb/s"), (1e3, "kb/s")):
        if abs(value) >= scale:
            return f"{_sig(value / scale)} {unit}"
    return f"{value:,.0f} b/s"


def fmt_pct(fraction: Any, digits: int = 3) -> str:
    """A fraction as a percentage: ``0.9312`` -> ``93.1 %``."""
    if fraction is None or (isinstance(fraction, float) and fraction != fraction):
        return "–"
    return f"{_sig(float(fraction) * 100, digits)} %"


def fmt_count(n: Any) -> str:
    """An integer with thousands separators."""
    if n is None or (isinstance(n, float) and n != n):
        return "–"
    return f"{int(n):,}"


class Col:
    """A column of :func:`human_table`: ``header`` shown, ``source`` column, ``format`` of each value."""

    def __init__(self, header: str, source: str, format: Any = None) -> None:
        self.header = header
        self.source = source
        self.format = format or fmt


def human_table(frame: pl.DataFrame, columns: Iterable[Col], limit: int = 50, note: str = "") -> str:
    """The first ``limit`` rows of ``frame``, the chosen columns formatted for reading
    (the Parquet files keep the exact integers); columns missing from ``frame`` are skipped."""
    cols = [c for c in columns if c.source in frame.columns]
    if frame.height == 0 or not cols:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{html.escape(c.header)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c.format(row[c.source]))}</td>" for c in cols) + "</tr>"
        for row in frame.head(limit).iter_rows(named=True)
    )
    more = (
        f'<p class="muted">{frame.height - limit:,} more rows{note or " in the Parquet file"}</p>'
        if frame.height > limit
        else ""
    )
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def banner(messages: Iterable[str], title: str = "Warnings", bad: bool = False) -> str:
    """A highlighted box listing ``messages`` (plain text, escaped here); empty when there are none."""
    items = [m for m in messages if m]
    if not items:
        return ""
    kind = "banner bad" if bad else "banner"
    body = "".join(f"<li>{html.escape(m)}</li>" for m in items)
    return f'<div class="{kind}" role="alert"><b>{html.escape(title)}</b><ul>{body}</ul></div>'


def details(summary: str, body: str) -> str:
    """A collapsed block: ``summary`` (plain text) opens ``body`` (HTML)."""
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def section(title: str, body: str) -> str:
    """A report section: an ``<h2>`` heading (plain text) and its ``body`` (HTML); empty without a body."""
    if not body:
        return ""
    return f"<h2>{html.escape(title)}</h2>{body}\n"


def html_table(frame: pl.DataFrame, limit: int = 50) -> str:
    """The first ``limit`` rows of ``frame`` as an HTML table."""
    if frame.height == 0:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{fmt(v)}</td>" for v in row) + "</tr>" for row in frame.head(limit).iter_rows()
    )
    more = f'<p class="muted">{frame.height - limit:,} more rows in the Parquet file</p>' if frame.height > limit else ""
    return f"<table><tr>{head}</tr>{rows}</table>{more}"


def cards(items: Iterable[tuple[str, str]]) -> str:
    """A grid of (label, value) cards."""
    return '<div class="grid">' + "".join(f'<div class="card">{k}<b>{v}</b></div>' for k, v in items) + "</div>"


def figure(name: str, svg: str) -> str:
    """An inline plot, tagged so :func:`write_plot_files` can save it as ``name.svg``."""
    return f'<figure data-plot="{html.escape(name)}">{svg}</figure>'


def html_page(title: str, body: str) -> str:
    """A complete page: ``title`` (escaped here) and ``body`` (HTML)."""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} · fabricsim</title>'
        f"<style>{CSS}</style></head><body>{body}</body></html>\n"
    )


_FIGURE = re.compile(r'<figure data-plot="([^"]+)">(<svg.*?</svg>)\s*</figure>', re.S)


def write_plot_files(page: str, directory: str | Path) -> list[Path]:
    """Save every plot of a report page as ``directory/<name>.svg``."""
    found = _FIGURE.findall(page)
    if not found:
        return []
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, svg in found:
        path = out / f"{name}.svg"
        path.write_text('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg + "\n", encoding="utf-8")
        paths.append(path)
    return paths
