"""Named presets of a model's settings, one module each: the registry behind
switch devices (:mod:`fabricsim.devices`, ``network.switch.device``) and host
datapaths (:mod:`fabricsim.hosts`, ``network.host.model``).

A preset module defines ``NAME``, ``SUMMARY`` (one line) and its settings
under the registry's attribute name (``SWITCH``, ``MODEL``), written like the
scenario section it stands for (units as strings). A scenario's explicit
settings are merged over the preset's: mappings key by key, at any depth, and
anything else (numbers, strings, lists) replaces the preset's value. A section
named in ``selectors`` (``buffer`` by its ``model``, ``arbitration`` by its
``kind``) is replaced whole when the explicit section selects another kind
than the preset's: a preset's shared-buffer parameters mean nothing to a VOQ
buffer.

Every lookup returns a copy, so a caller may change what it gets.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["Preset", "Registry"]


@dataclass(frozen=True)
class Preset:
    name: str
    summary: str
    settings: dict[str, Any]


class Registry:
    """The presets of one package, in listing order (module documentation)."""

    def __init__(self, package: str, modules: Sequence[str], attribute: str,
                 selectors: Mapping[str, tuple[str, Any]] | None = None) -> None:
        self._selectors = dict(selectors or {})
        self._presets: dict[str, Preset] = {}
        for module_name in modules:
            m = importlib.import_module(f"{package}.{module_name}")
            self._presets[m.NAME] = Preset(m.NAME, m.SUMMARY, getattr(m, attribute))

    def names(self) -> list[str]:
        """Preset names, in listing order."""
        return list(self._presets)

    def get(self, name: str) -> Preset:
        """The preset called ``name`` (a deep copy of its settings); ``KeyError`` if there is none."""
        p = self._presets[name]
        return Preset(p.name, p.summary, copy.deepcopy(p.settings))

    def merge(self, preset: Mapping[str, Any], explicit: Mapping[str, Any]) -> dict[str, Any]:
        """``explicit`` settings merged over ``preset`` (neither is modified)."""
        out = copy.deepcopy(dict(preset))
        for key, value in explicit.items():
            current = out.get(key)
            if isinstance(value, dict) and isinstance(current, dict):
                selector = self._selectors.get(key)
                if selector is not None and selector[0] in value and value[selector[0]] != current.get(*selector):
                    out[key] = copy.deepcopy(value)
                else:
                    out[key] = self.merge(current, value)
            else:
                out[key] = copy.deepcopy(value)
        return out

    def merged(self, name: str, explicit: Mapping[str, Any]) -> dict[str, Any]:
        """The settings of preset ``name`` with ``explicit`` merged over them."""
        return self.merge(self._presets[name].settings, explicit)
