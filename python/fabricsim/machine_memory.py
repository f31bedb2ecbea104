"""Memory this process may still take: what the machine has available
(``MemAvailable`` in ``/proc/meminfo``), within the process's address-space
limit (``RLIMIT_AS``, less what it already maps) and its cgroup's limit
(``memory.max`` less ``memory.current``, cgroup v2). ``None`` where none of
them can be read (not Linux)."""

from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["available_bytes", "shortfall"]


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _address_space_left() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    mapped = 0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                mapped = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return max(soft - mapped, 0)


def _cgroup_left() -> int | None:
    try:
        rel = Path("/proc/self/cgroup").read_text().strip().split("\n")[0].split("::", 1)[1]
        base = Path("/sys/fs/cgroup") / rel.lstrip("/")
        limit = (base / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(int(limit) - int((base / "memory.current").read_text()), 0)
    except (OSError, ValueError, IndexError):
        return None


def available_bytes() -> int | None:
    """The least of the three (module documentation), or ``None``."""
    known = [v for v in (_meminfo_available(), _address_space_left(), _cgroup_left()) if v is not None]
    return min(known) if known else None


def shortfall(needed: int) -> str | None:
    """``"about N GiB; this machine has M GiB available"`` when ``needed`` bytes
    are more than :func:`available_bytes`, else ``None`` (also where it is unknown)."""
    available = available_bytes()
    if available is None or needed <= available:
        return None
    gib = 1 << 30
    return f"about {needed / gib:.1f} GiB; this machine has {available / gib:.1f} GiB available"
