"""The registry of reproductions: report name -> its module's ``REPORT``."""

from __future__ import annotations

import importlib
from typing import Any

from fabricsim.reproductions.base import ReproduceError

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
        raise ReproduceError(f"unknown reproduction {name!r}; known: {', '.join(NAMES)}")
    return importlib.import_module(f"fabricsim.reproductions.{_MODULES[name]}").REPORT
