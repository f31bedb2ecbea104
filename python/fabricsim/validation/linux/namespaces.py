"""The lab's network namespaces: created one per node, deleted with the processes in them,
and swept when the lab process that made them died without cleaning up (:func:`sweep_stale`)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess

from fabricsim.validation.linux.probes import _cmd, unavailable_reason
from fabricsim.validation.linux.topology import PREFIX


def _create_namespace(ns: str) -> None:
    """Add network namespace ``ns`` (LabError if ``ip netns add`` fails)."""
    _cmd(["ip", "netns", "add", ns])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _namespaces() -> list[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def _delete_namespace(ns: str) -> None:
    """End the processes inside ``ns`` (all started by a lab) and delete it."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def sweep_stale(prefix: str = PREFIX) -> list[str]:
    """Delete lab namespaces whose creating process is gone; returns their names."""
    if unavailable_reason(("ip",)):
        return []
    pattern = re.compile(rf"^{re.escape(prefix)}-(\d+)-")
    removed = []
    for ns in _namespaces():
        match = pattern.match(ns)
        if match and not _alive(int(match.group(1))):
            _delete_namespace(ns)
            removed.append(ns)
    return removed
