"""How long the lab's processes wait for a CPU, event by event, from the kernel's scheduler trace.

/proc's schedstat gives a process's total time runnable but not running
(``run_delay``) and how often it was scheduled: a mean. The receiving
application's ACK cadence depends on the whole distribution (a reader that
usually runs within 50 us but sometimes waits 5 ms holds a window's data
unacknowledged for those 5 ms), so the lab also records it, from tracefs:

- ``sched:sched_wakeup`` (and ``sched_wakeup_new``) of the watched command:
  the instant a sleeping process became runnable;
- ``sched:sched_switch`` with the process as ``prev``: when it left its CPU,
  and whether it was still runnable (``R``: preempted) or went to sleep;
- ``raw_syscalls:sys_exit`` of the process: it is running again (and, for
  a read that returned data, one ``read()`` call of the application).

The *wake-up delay* of one wake-up is the time from ``sched_wakeup`` to the
first event the process itself produces afterwards (the return from the
system call it slept in): the scheduler's delay plus the few microseconds
of that return. A *preemption wait* runs from a switch-out in state ``R`` to
the process's next event. The switch-in side of ``sched_switch`` is not
used: on some virtual machines (this lab's among them) a switch from the
idle task is often not traced, while the process's own events always are.

The trace runs in a tracefs *instance* of its own (its own buffer, events,
filters and clock ``mono``, comparable across CPUs), so the global tracing
state is not touched; the instance is removed afterwards, and tracefs is
mounted on a temporary directory (and unmounted) if it is not mounted yet.
Needs root; :func:`available` says whether it can run. The parser
(:func:`parse_trace`) works on recorded text without root.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

#: Points of the recorded distributions: the (i + 0.5) / QUANTILES quantiles, i = 0..QUANTILES-1.
QUANTILES = 100

_EVENTS = ("sched/sched_wakeup", "sched/sched_wakeup_new", "raw_syscalls/sys_exit")
_LINE = re.compile(r"^\s*(?P<comm>.*)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?(?P<t>\d+\.\d+): (?P<event>\w+): (?P<rest>.*)$")
_WAKEE = re.compile(r"(?:^|\s)pid=(\d+)")
_SYS_EXIT = re.compile(r"NR (\d+) = (-?\d+)")

#: x86-64 numbers of the system calls that read a socket: read, pread64, readv, recvfrom, recvmsg.
READ_SYSCALLS = frozenset({0, 17, 19, 45, 47})
_PREV_STATE = re.compile(r"prev_state=(\S+)")


def quantile_points(values: Sequence[float], points: int = QUANTILES) -> list[float]:
    """``points`` evenly spaced quantiles (the midpoints (i + 0.5) / points) of ``values``:
    uniform draws from them follow the measured distribution to 1 / points in probability."""
    ordered = sorted(values)
    if not ordered:
        return []
    n = len(ordered)
    return [ordered[min(n - 1, int((i + 0.5) * n / points))] for i in range(points)]


@dataclass
class Waits:
    """One process's scheduling waits over a run (seconds)."""

    pid: int
    wakeups: list[float] = field(default_factory=list)
    """Each wake-up's delay: runnable (``sched_wakeup``) to running (its next own event)."""
    preemptions: list[float] = field(default_factory=list)
    """Each preemption's wait: switched out runnable to running again."""
    data_reads: int = 0
    """Read-type system calls that returned data (``sys_exit`` of :data:`READ_SYSCALLS` > 0)."""
    loop_tails: list[float] = field(default_factory=list)
    """For each time the process went to sleep after reading data: the time
    from the return of its last read that returned data to its switch-out
    (the rest of its loop: a read that finds nothing, ``select()``)."""

    def summary(self) -> dict[str, Any]:
        """Counts, means and :data:`QUANTILES` quantile points in ns (JSON-ready)."""

        out: dict[str, Any] = {"data_reads": self.data_reads}
        for plural, one, values in (
            ("wakeups", "wakeup", self.wakeups),
            ("preemptions", "preemption", self.preemptions),
            ("loop_tails", "loop_tail", self.loop_tails),
        ):
            out[plural] = len(values)
            out[f"{one}_mean_ns"] = round(statistics.fmean(values) * 1e9) if values else 0
            out[f"{one}_quantiles_ns"] = [round(v * 1e9) for v in quantile_points(values)]
        return out


def parse_trace(lines: Iterable[str], pids: Optional[Sequence[int]] = None) -> dict[int, Waits]:
    """Wake-up delays and preemption waits per process from tracefs text
    (``trace`` file format: ``COMM-PID [CPU] FLAGS TIME: EVENT: FIELDS``) with the
    events of :class:`SchedTrace`; ``pids`` limits the result to those processes."""
    wanted = set(pids) if pids is not None else None
    pending: dict[int, tuple[float, bool]] = {}  # pid -> (since, woken (True) or preempted (False))
    last_read: dict[int, float] = {}  # pid -> return of its last data read since it last slept
    waits: dict[int, Waits] = {}
    for line in lines:
        match = _LINE.match(line)
        if match is None:
            continue
        task = int(match["pid"])
        t = float(match["t"])
        event = match["event"]
        if task in pending:
            since, woken = pending.pop(task)
            record = waits.setdefault(task, Waits(task))
            (record.wakeups if woken else record.preemptions).append(t - since)
        if event == "sys_exit" and (wanted is None or task in wanted):
            call = _SYS_EXIT.search(match["rest"])
            if call is not None and int(call.group(1)) in READ_SYSCALLS and int(call.group(2)) > 0:
                waits.setdefault(task, Waits(task)).data_reads += 1
                last_read[task] = t
        elif event in ("sched_wakeup", "sched_wakeup_new"):
            wakee = _WAKEE.search(match["rest"])
            if wakee is not None:
                pid = int(wakee.group(1))
                if pid != task and pid not in pending and (wanted is None or pid in wanted):
                    pending[pid] = (t, True)
        elif event == "sched_switch" and (wanted is None or task in wanted):
            state = _PREV_STATE.search(match["rest"])
            if state is not None and state.group(1).startswith("R"):
                pending[task] = (t, False)
            elif state is not None and task in last_read:
                waits.setdefault(task, Waits(task)).loop_tails.append(t - last_read.pop(task))
    if wanted is not None:
        return {pid: waits.get(pid, Waits(pid)) for pid in sorted(wanted)}
    return dict(sorted(waits.items()))


def _tracefs() -> Optional[Path]:
    for path in (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing")):
        if (path / "instances").is_dir():
            return path
    return None


def available() -> Optional[str]:
    """None if the scheduler trace can run here, else why not (probed once:
    root, tracefs mounted or mountable, and an instance can be made)."""
    if os.geteuid() != 0:
        return "needs root (tracefs)"
    return _probe()


@functools.lru_cache(maxsize=1)
def _probe() -> Optional[str]:
    try:
        with SchedTrace("fabricsim-probe", buffer_kb=64):
            pass
    except (OSError, subprocess.SubprocessError) as exc:
        return f"tracefs not usable here: {exc}"
    return None


class SchedTrace:
    """Trace the scheduler's view of every process named ``command`` while the block runs.

    ``with SchedTrace("iperf3") as trace: ...`` then ``trace.waits(pids)``.
    ``buffer_kb`` is the instance's buffer per CPU; a run that overflows it
    loses its oldest events (``overruns`` says how many), so size it to the run.
    """

    def __init__(self, command: str, buffer_kb: int = 131072) -> None:
        if not re.fullmatch(r"[\w.+-]{1,15}", command):
            raise ValueError(f"command: not a process name: {command!r}")
        self.command = command
        self.buffer_kb = buffer_kb
        self.text: list[str] = []
        self.overruns = 0
        self._mounted: Optional[Path] = None
        self._instance: Optional[Path] = None
        self.name = ""
        """The tracefs instance's name (``fabricsim-PID-TOKEN``), once started."""

    def __enter__(self) -> "SchedTrace":
        root = _tracefs()
        if root is None:
            mountpoint = Path(tempfile.mkdtemp(prefix="fabricsim-tracefs-"))
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(mountpoint)], check=True, capture_output=True)
            self._mounted = root = mountpoint
        try:
            _sweep_stale(root / "instances")
            instance = root / "instances" / f"fabricsim-{os.getpid()}-{secrets.token_hex(3)}"
            self.name = instance.name
            instance.mkdir()
            self._instance = instance
            (instance / "buffer_size_kb").write_text(str(self.buffer_kb))
            (instance / "trace_clock").write_text("mono")
            for event in _EVENTS:
                (instance / "events" / event / "filter").write_text(f'comm == "{self.command}"')
                (instance / "events" / event / "enable").write_text("1")
            switch = instance / "events" / "sched" / "sched_switch"
            (switch / "filter").write_text(f'prev_comm == "{self.command}"')
            (switch / "enable").write_text("1")
            (instance / "tracing_on").write_text("1")
        except BaseException:
            self._cleanup()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._instance is not None:
                (self._instance / "tracing_on").write_text("0")
                self.text = (self._instance / "trace").read_text().splitlines()
                for stats in sorted((self._instance / "per_cpu").glob("cpu*/stats")):
                    for line in stats.read_text().splitlines():
                        if line.startswith("overrun:"):
                            self.overruns += int(line.split()[1])
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        if self._instance is not None:
            with contextlib.suppress(OSError):
                (self._instance / "tracing_on").write_text("0")
            with contextlib.suppress(OSError):
                (self._instance / "events" / "enable").write_text("0")
            with contextlib.suppress(OSError):
                self._instance.rmdir()
            self._instance = None
        if self._mounted is not None:
            subprocess.run(["umount", str(self._mounted)], check=False, capture_output=True)
            with contextlib.suppress(OSError):
                self._mounted.rmdir()
            self._mounted = None

    def waits(self, pids: Sequence[int]) -> dict[int, Waits]:
        """The waits of ``pids`` over the traced block."""
        return parse_trace(self.text, pids)


def _sweep_stale(instances: Path) -> None:
    """Removes the instances of trace processes that died without cleaning up
    (tracefs is one file system however often it is mounted, so they outlive
    their mount)."""
    for path in instances.glob("fabricsim-*-*"):
        try:
            pid = int(path.name.split("-")[1])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid() or Path(f"/proc/{pid}").exists():
            continue
        with contextlib.suppress(OSError):
            (path / "tracing_on").write_text("0")
            (path / "events" / "enable").write_text("0")
            path.rmdir()


def summaries(trace: Optional[SchedTrace], pids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """:meth:`Waits.summary` of each pid (plus the trace's ``overruns``); empty without a trace."""
    if trace is None or not trace.text:
        return {}
    out = {}
    for pid, waits in trace.waits(pids).items():
        summary = waits.summary()
        summary["overruns"] = trace.overruns
        out[pid] = summary
    return out


__all__ = ["QUANTILES", "READ_SYSCALLS", "SchedTrace", "Waits", "available", "parse_trace", "quantile_points", "summaries"]
