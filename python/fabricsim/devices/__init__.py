"""Switch device presets, picked by name with ``network.switch.device``.

Each preset lives in its own module of this package and defines ``NAME``,
``SUMMARY`` (one line) and ``SWITCH``: switch settings written like a
scenario's ``network.switch`` section (units as strings). A scenario's
explicit switch settings are merged over the preset, key by key; a ``buffer``
whose ``model`` (an ``arbitration`` whose ``kind``) differs from the preset's
replaces the preset's (:mod:`fabricsim.presets`).
Facts and assumptions behind each preset: ``docs/models/devices.md``.
"""

from __future__ import annotations

from fabricsim.presets import Preset, Registry

__all__ = ["Preset", "REGISTRY", "get", "merge", "merged", "names"]

REGISTRY = Registry(
    __name__,
    (
        "trident3_like",
        "spectrum_like",
        "tomahawk_like",
        "jericho_deep",
        "nexus_ib_5mb",
        "nexus_ib_10mb",
        "static_12mb",
        "fm4000_like",
        "optical_broadcast",
    ),
    "SWITCH",
    # Sections whose kind-selecting key, when changed, replaces the preset's section.
    selectors={"buffer": ("model", "static"), "arbitration": ("kind", "fifo")},
)

names = REGISTRY.names
get = REGISTRY.get
merge = REGISTRY.merge
merged = REGISTRY.merged
