"""Congestion controllers written in Python against ``fabricsim.extensions.register_cc``.

- :mod:`.newreno`: the core's NewReno, line for line (the same outputs as ``tcp.cc: newreno``);
- :mod:`.swift`: the Swift-like delay-based controller of ``crates/fabricsim-ext-example/src/swift.rs``,
  line for line (the same outputs as ``tcp.cc: swift`` of a core built with ``example-extensions``).

``register()`` registers both (``newreno-py``, ``swift-py``).
"""

from fabricsim.extensions.examples.newreno import NewRenoPy
from fabricsim.extensions.examples.swift import SWIFT_SCHEMA, SwiftPy

__all__ = ["NewRenoPy", "SWIFT_SCHEMA", "SwiftPy", "register"]


def register(replace: bool = True) -> None:
    """Registers ``newreno-py`` and ``swift-py`` in this process."""
    from fabricsim.extensions import register_cc
    from fabricsim.extensions.examples.newreno import NEWRENO_SCHEMA

    register_cc("newreno-py", NewRenoPy, schema=NEWRENO_SCHEMA, replace=replace)
    register_cc("swift-py", SwiftPy, schema=SWIFT_SCHEMA, replace=replace)
