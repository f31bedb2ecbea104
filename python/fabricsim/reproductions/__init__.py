"""Reproductions of published switch benchmark reports: ``fabricsim reproduce NAME``.

One module per report (its tests, devices and page) and a registry; the
scenario files and the sweep definition of each report are package data in
``reproductions/data/<report>/``. See docs/reproduce.md.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["NAMES", "get"]

#: Report name -> module.
_MODULES = {
    "esg-trident3": "esg_trident3",
    "pt-pensando": "pt_pensando",
    "miercom-buffers": "miercom_buffers",
    "esnet-buffers": "esnet_buffers",
    "tolly-lightfleet": "tolly_lightfleet",
}
NAMES = tuple(_MODULES)


def get(name: str) -> Any:
    """The :class:`~fabricsim.reproductions.base.Report` called ``name``."""
    if name not in _MODULES:
        from fabricsim.reproductions.job import ReproduceError

        raise ReproduceError(f"unknown reproduction {name!r}; known: {', '.join(NAMES)}")
    return importlib.import_module(f"fabricsim.reproductions.{_MODULES[name]}").REPORT
