"""Reproductions of published switch benchmark reports: ``fabricsim reproduce NAME``.

One module per report (its tests, devices and page) and a registry; the
scenario files and the sweep definition of each report are package data in
``reproductions/data/<report>/``. See docs/reproduce.md.
"""

from __future__ import annotations

from fabricsim.reproductions.registry import NAMES, get

__all__ = ["NAMES", "get"]
