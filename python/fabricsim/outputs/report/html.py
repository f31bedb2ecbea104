"""Pieces of the self-contained HTML pages (run and sweep reports): style, values, tables, cards, plots."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Iterable

import polars as pl

__all__ = ["CSS", "cards", "figure", "fmt", "html_page", "html_table", "write_plot_files"]

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
h1{margin-bottom:.2rem} h2{margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right} th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
.ok{color:#127a1f;font-weight:600} .bad{color:#b00020;font-weight:600} .muted{color:#666}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(220px,1fr));gap:.5rem}
.card{border:1px solid #ddd;border-radius:6px;padding:.6rem} .card b{font-size:1.3rem;display:block}
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
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return html.escape(str(value))


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
