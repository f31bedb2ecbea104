"""A fingerprint of the code that computes results, so that a resumed sweep or
reproduction reruns the points an earlier build of fabricsim recorded.

The fingerprint is a digest of the compiled core's library and of every Python
module of the package except those that only present results (the run and
sweep reports, the reproduction pages and their claims tables, the command
line, the benchmarks and the lab tools): upgrading fabricsim, rebuilding the
core or editing a model changes it; editing a page's layout does not.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

__all__ = ["fingerprint"]

_PACKAGE = Path(__file__).resolve().parent

_PRESENTATION = ("outputs/report/", "cli/", "bench/", "validation/", "sweeps/report.py", "sweeps/progress.py",
                 "reproductions/page.py", "reproductions/claims.py", "reproductions/golden.py",
                 "experiments/ai_fabric_report.py")
"""Modules (paths relative to the package) that do not change what a point computes."""


def _core_library() -> Path | None:
    spec = importlib.util.find_spec("fabricsim._core")
    origin = spec.origin if spec is not None else None
    return Path(origin) if origin and origin not in ("built-in", "frozen") else None


@functools.lru_cache(maxsize=1)
def fingerprint() -> str:
    """16 hex digits of the digest (module documentation); computed once per process."""
    digest = hashlib.sha256()
    core = _core_library()
    if core is not None and core.is_file():
        digest.update(b"core\0")
        digest.update(core.read_bytes())
    for path in sorted(_PACKAGE.rglob("*.py")):
        relative = path.relative_to(_PACKAGE).as_posix()
        if relative.startswith(_PRESENTATION):
            continue
        digest.update(relative.encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
