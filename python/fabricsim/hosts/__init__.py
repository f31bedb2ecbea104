"""Host datapath presets, picked by name with ``network.host.model``.

Each preset lives in its own module of this package and defines ``NAME``,
``SUMMARY`` (one line) and ``MODEL``: host-model settings written like a
scenario's ``network.host.model`` section (units as strings). A scenario's
explicit settings are merged over the preset key by key (``interrupt`` and
``nic`` merge their own keys; ``stages`` and ``machines``, lists, replace the
preset's; :mod:`fabricsim.presets`). Facts and assumptions behind each preset:
``docs/models/host.md``.
"""

from __future__ import annotations

from fabricsim.presets import Preset, Registry

__all__ = ["Preset", "REGISTRY", "get", "merge", "merged", "names"]

REGISTRY = Registry(__name__, ("linux_kernel", "linux_veth", "kernel_bypass"), "MODEL")

names = REGISTRY.names
get = REGISTRY.get
merge = REGISTRY.merge
merged = REGISTRY.merged
