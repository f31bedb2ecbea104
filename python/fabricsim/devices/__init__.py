"""Switch device presets, picked by name with ``network.switch.device``.

Each preset lives in its own module of this package and defines ``NAME``,
``SUMMARY`` (one line) and ``SWITCH``: switch settings written like a
scenario's ``network.switch`` section (units as strings). A scenario's
explicit switch settings are merged over the preset, key by key; a ``buffer``
whose ``model`` (an ``arbitration`` whose ``kind``) differs from the preset's
replaces the preset's.
Facts and assumptions behind each preset: ``docs/models/devices.md``.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["Device", "get", "merge", "names"]

_MODULES = (
    "trident3_like",
    "spectrum_like",
    "tomahawk_like",
    "jericho_deep",
    "nexus_ib_5mb",
    "nexus_ib_10mb",
    "static_12mb",
    "fm4000_like",
    "optical_broadcast",
)


@dataclass(frozen=True)
class Device:
    name: str
    summary: str
    switch: dict[str, Any]


def _load() -> dict[str, Device]:
    out = {}
    for module_name in _MODULES:
        m = importlib.import_module(f"{__name__}.{module_name}")
        out[m.NAME] = Device(m.NAME, m.SUMMARY, m.SWITCH)
    return out


_DEVICES = _load()


def names() -> list[str]:
    """Preset names, in listing order."""
    return list(_DEVICES)


def get(name: str) -> Device:
    """The preset called ``name`` (a deep copy of its settings)."""
    d = _DEVICES[name]
    return Device(d.name, d.summary, copy.deepcopy(d.switch))


# Sections whose kind-selecting key, when changed, replaces the preset's section.
_SELECTORS = {"buffer": ("model", "static"), "arbitration": ("kind", "fifo")}


def merge(preset: dict[str, Any], explicit: dict[str, Any]) -> dict[str, Any]:
    """``explicit`` switch settings merged over ``preset`` (neither is modified)."""
    out = copy.deepcopy(preset)
    for key, value in explicit.items():
        current = out.get(key)
        if key in _SELECTORS and isinstance(value, dict) and isinstance(current, dict):
            selector, default = _SELECTORS[key]
            if selector in value and value[selector] != current.get(selector, default):
                out[key] = copy.deepcopy(value)
            else:
                out[key] = merge(current, value)
        elif isinstance(value, dict) and isinstance(current, dict):
            out[key] = merge(current, value)
        else:
            out[key] = copy.deepcopy(value)
    return out
