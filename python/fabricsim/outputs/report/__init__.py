"""Self-contained HTML reports: plots are inline SVG, so a page has no external files and opens offline.

- :mod:`~fabricsim.outputs.report.html`: page pieces shared by every report (style, tables, cards, plot tags);
- :mod:`~fabricsim.outputs.report.plots`: matplotlib helpers (imported only when a plot is drawn);
- :mod:`~fabricsim.outputs.report.run`: the report of one run, section by section.

The sweep report (:mod:`fabricsim.sweeps.report`) is built from the same pieces.
"""

from fabricsim.outputs.report.html import write_plot_files
from fabricsim.outputs.report.run import render_html, write_report

__all__ = ["render_html", "write_plot_files", "write_report"]
