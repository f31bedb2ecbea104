"""Host datapath presets, picked by name with ``network.host.model``.

Each preset lives in its own module of this package and defines ``NAME``,
``SUMMARY`` (one line) and ``MODEL``: host-model settings written like a
scenario's ``network.host.model`` section (units as strings). A scenario's
explicit settings are merged over the preset key by key (``interrupt`` and
``nic`` merge their own keys; ``stages`` and ``machines`` replace the
preset's). Facts and assumptions behind each preset:
``docs/models/host.md``.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["HostPreset", "get", "merge", "names"]

_MODULES = ("linux_kernel", "linux_veth", "kernel_bypass")


@dataclass(frozen=True)
class HostPreset:
    name: str
    summary: str
    model: dict[str, Any]


def _load() -> dict[str, HostPreset]:
    out = {}
    for module in _MODULES:
        m = importlib.import_module(f"fabricsim.hosts.{module}")
        out[m.NAME] = HostPreset(m.NAME, m.SUMMARY, m.MODEL)
    return out


_PRESETS = _load()


def names() -> list[str]:
    """Preset names, in registry order."""
    return list(_PRESETS)


def get(name: str) -> HostPreset:
    """The preset called ``name``; ``KeyError`` if there is none."""
    return _PRESETS[name]


def merge(preset: dict[str, Any], explicit: dict[str, Any]) -> dict[str, Any]:
    """``explicit`` settings over a copy of ``preset``: mappings merge key by key, anything else replaces."""
    out = copy.deepcopy(preset)
    for key, value in explicit.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = copy.deepcopy(value)
    return out
