"""What the machine offers the lab and how busy it is: root and the tools
(:func:`unavailable_reason`), the kernel's qdiscs (:func:`qdisc_available`), the
congestion controls a namespace may default to (:func:`congestion_control_allowed`),
the environment a measurement ran in (kernel, tool versions, sysctls: :func:`environment`),
and the CPU and per-process counters read from /proc around a run."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Protocol, Sequence

from fabricsim.validation.linux.topology import PREFIX, TOOLS, Egress, LabError, _red_args


class _Namespaced(Protocol):
    """What :func:`environment` needs of a lab: the namespace of a node."""

    def ns(self, node: str) -> str: ...


def _cmd(argv: Sequence[str], check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise LabError(f"{' '.join(argv)} failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
    return done


def unavailable_reason(tools: Sequence[str] = TOOLS) -> Optional[str]:
    """Why the lab cannot run here (not root, a tool missing), or None when it can."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "the Linux lab needs root (network namespaces)"
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        return f"the Linux lab needs these tools: {', '.join(missing)}"
    if not os.path.isdir("/proc/sys/net"):
        return "no /proc/sys/net: not a Linux network stack"
    return None


def _require(tools: Sequence[str] = TOOLS) -> None:
    reason = unavailable_reason(tools)
    if reason:
        raise LabError(reason)


_QDISC_PROBES: dict[str, bool] = {}


def qdisc_available(kind: str) -> bool:
    """Whether the running kernel has qdisc ``kind`` (probed once in a throwaway namespace)."""
    if kind in _QDISC_PROBES:
        return _QDISC_PROBES[kind]
    _require(("ip", "tc"))
    ns = f"{PREFIX}-{os.getpid()}-{secrets.token_hex(3)}-probe"
    args = {"bfifo": "limit 10000", "pfifo": "limit 10", "red": _red_args(Egress(queue="red", limit=100_000), 1500)}
    try:
        _cmd(["ip", "netns", "add", ns])
        done = subprocess.run(
            ["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", kind, *args.get(kind, "").split()],
            capture_output=True,
            text=True,
        )
        _QDISC_PROBES[kind] = done.returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    return _QDISC_PROBES[kind]


# --------------------------------------------------------------------------- CPU accounting


@dataclass(frozen=True)
class CpuSnapshot:
    """System CPU time (/proc/stat, in USER_HZ ticks turned into seconds) and softirq threads' run time.

    ``ksoftirqd_s`` is the scheduler's run time (``/proc/PID/schedstat``) of the
    ``ksoftirqd/N`` threads, where the kernel defers softirq work it cannot
    finish in the context that raised it.
    """

    time_s: float
    user_s: float
    nice_s: float
    system_s: float
    idle_s: float
    iowait_s: float
    irq_s: float
    softirq_s: float
    steal_s: float
    ksoftirqd_s: float

    def minus(self, before: "CpuSnapshot") -> "CpuSnapshot":
        return CpuSnapshot(*(a - b for a, b in zip(asdict(self).values(), asdict(before).values())))

    @property
    def busy_s(self) -> float:
        return self.user_s + self.nice_s + self.system_s + self.irq_s + self.softirq_s


def _ksoftirqd_pids() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as handle:
                    if handle.read().startswith("ksoftirqd/"):
                        pids.append(int(entry))
            except OSError:
                continue
    return sorted(pids)


def task_runtime_s(pid: int) -> float:
    """Seconds the scheduler has run task ``pid`` (first field of /proc/PID/schedstat); 0 when gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as handle:
            return int(handle.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


@dataclass
class ReaderStats:
    """How a receiving process read its socket over a run, from /proc (no tracing).

    ``syscalls`` and ``bytes`` are the deltas of ``syscr`` and ``rchar`` in
    /proc/PID/io (every read-type system call, and the bytes they returned);
    ``runtime_ns``, ``run_delay_ns`` and ``timeslices`` those of
    /proc/PID/task/*/schedstat (time on a CPU, time runnable but waiting for
    one, times scheduled onto a CPU); ``voluntary_switches`` those of
    ``voluntary_ctxt_switches`` in /proc/PID/status (times it went to sleep,
    so about the wake-ups); ``wall_s`` the time between the two readings.
    """

    pid: int
    syscalls: int = 0
    bytes: int = 0
    runtime_ns: int = 0
    run_delay_ns: int = 0
    timeslices: int = 0
    voluntary_switches: int = 0
    wall_s: float = 0.0
    write_syscalls: int = 0
    """``syscw``: write-type system calls (a sender's writes)."""
    bytes_written: int = 0
    """``wchar``: bytes those calls took."""
    sched: Optional[dict[str, Any]] = None
    """The scheduler trace's distributions of this process's waits
    (:func:`fabricsim.validation.sched_trace.summaries`: wake-up delays and
    preemption waits, counts, means and quantile points in ns); None where
    tracefs was not available."""

    @property
    def reads_per_s(self) -> float:
        return self.syscalls / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def bytes_per_read(self) -> float:
        return self.bytes / self.syscalls if self.syscalls else 0.0

    @property
    def delay_per_wakeup_s(self) -> float:
        """Mean time runnable but not running per time scheduled (run_delay / pcount)."""
        return self.run_delay_ns / 1e9 / self.timeslices if self.timeslices else 0.0

    @property
    def cpu_per_byte_s(self) -> float:
        """CPU time per byte read: an upper bound on the copy cost (it includes the rest of the loop)."""
        return self.runtime_ns / 1e9 / self.bytes if self.bytes else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            reads_per_s=self.reads_per_s,
            bytes_per_read=self.bytes_per_read,
            delay_per_wakeup_s=self.delay_per_wakeup_s,
            cpu_per_byte_s=self.cpu_per_byte_s,
        )
        return out


def reader_counters(pid: int) -> Optional[dict[str, Any]]:
    """The /proc counters of process ``pid`` that :class:`ReaderStats` uses; None once it is gone."""
    try:
        io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines() if ": " in line)
        status = dict(
            line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line
        )
        tasks: dict[int, tuple[int, int, int]] = {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                run, delay, slices = (int(v) for v in Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[:3])
                tasks[int(tid)] = (run, delay, slices)
        return {
            "t": time.monotonic(),
            "syscr": int(io["syscr"]),
            "rchar": int(io["rchar"]),
            "syscw": int(io.get("syscw", 0)),
            "wchar": int(io.get("wchar", 0)),
            "voluntary": int(status.get("voluntary_ctxt_switches", "0").strip()),
            "tasks": tasks,
        }
    except (OSError, KeyError, ValueError):
        return None


def reader_stats(pid: int, before: Mapping[str, Any], after: Mapping[str, Any]) -> ReaderStats:
    """The deltas between two :func:`reader_counters` readings of one process."""
    run = delay = slices = 0
    for tid, (r, d, n) in after["tasks"].items():
        r0, d0, n0 = before["tasks"].get(tid, (0, 0, 0))
        run, delay, slices = run + r - r0, delay + d - d0, slices + n - n0
    return ReaderStats(
        pid=pid,
        syscalls=after["syscr"] - before["syscr"],
        bytes=after["rchar"] - before["rchar"],
        runtime_ns=run,
        run_delay_ns=delay,
        timeslices=slices,
        voluntary_switches=after["voluntary"] - before["voluntary"],
        wall_s=after["t"] - before["t"],
        write_syscalls=after.get("syscw", 0) - before.get("syscw", 0),
        bytes_written=after.get("wchar", 0) - before.get("wchar", 0),
    )


class _ProcessWatch:
    """Reads the /proc counters of watched processes when they are added and
    every ``interval_s`` until closed; :meth:`close` gives one
    :class:`ReaderStats` per process, from its first reading to the last one
    taken while it was alive (an iperf3 process exits with its test)."""

    def __init__(self, pids: Sequence[int] = (), interval_s: float = 0.2) -> None:
        self.pids: list[int] = []
        self.stats: list[ReaderStats] = []
        self.first: dict[int, Optional[dict[str, Any]]] = {}
        self.last: dict[int, Optional[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        for pid in pids:
            self.add(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, args=(interval_s,), daemon=True)
        self._thread.start()

    def add(self, pid: int) -> None:
        reading = reader_counters(pid)
        with self._lock:
            self.pids.append(pid)
            self.first[pid] = self.last[pid] = reading

    def _poll(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            with self._lock:
                pids = list(self.pids)
            for pid in pids:
                now = reader_counters(pid)
                if now is not None:
                    with self._lock:
                        self.last[pid] = now

    def close(self) -> list[ReaderStats]:
        if self._stop.is_set():
            return self.stats
        self._stop.set()
        self._thread.join()
        out = self.stats
        for pid in self.pids:
            got = reader_counters(pid)
            if got is not None:
                self.last[pid] = got
            first, last = self.first[pid], self.last[pid]
            if first is not None and last is not None:
                out.append(reader_stats(pid, first, last))
        return out


def cpu_snapshot() -> CpuSnapshot:
    """Read /proc/stat (all CPUs) and the ksoftirqd threads' run time."""
    hz = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as handle:
        fields = handle.readline().split()[1:]
    values = [int(v) / hz for v in fields[:8]] + [0.0] * max(0, 8 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = values[:8]
    ksoft = sum(task_runtime_s(pid) for pid in _ksoftirqd_pids())
    return CpuSnapshot(time.monotonic(), user, nice, system, idle, iowait, irq, softirq, steal, ksoft)


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages."""
    with open("/proc/loadavg") as handle:
        one, five, fifteen = handle.read().split()[:3]
    return float(one), float(five), float(fifteen)


def softnet_drops() -> int:
    """Packets the kernel dropped because a CPU's input backlog was full (/proc/net/softnet_stat)."""
    total = 0
    with open("/proc/net/softnet_stat") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) > 1:
                total += int(fields[1], 16)
    return total


def environment(lab: Optional[_Namespaced] = None, node: Optional[str] = None) -> dict[str, Any]:
    """Where a measurement ran: date, kernel, tool versions, CPUs, load, git commit, TCP sysctls.

    With a lab and one of its nodes, the sysctls are read inside that node's
    namespace (the TCP ones are per namespace); otherwise in this process's.
    """
    import datetime
    import platform

    def first_line(argv: Sequence[str]) -> str:
        try:
            done = subprocess.run(list(argv), capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr).strip() else ""

    keys = (
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
        "net.ipv4.tcp_congestion_control",
        "net.ipv4.tcp_allowed_congestion_control",
        "net.ipv4.tcp_sack",
        "net.ipv4.tcp_recovery",
        "net.ipv4.tcp_early_retrans",
        "net.ipv4.tcp_limit_output_bytes",
        "net.ipv4.tcp_pacing_ss_ratio",
        "net.ipv4.tcp_pacing_ca_ratio",
        "net.ipv4.tcp_min_snd_mss",
        "net.core.netdev_max_backlog",
    )
    sysctls = {}
    for key in keys:
        argv = ["sysctl", "-n", key]
        # The allowed list is one for the machine: only the init namespace shows it.
        if lab is not None and node is not None and key != "net.ipv4.tcp_allowed_congestion_control":
            argv = ["ip", "netns", "exec", lab.ns(node), *argv]
        sysctls[key] = " ".join(first_line(argv).split())
    cubic = {}
    for name in ("hystart", "hystart_detect", "hystart_low_window", "hystart_ack_delta_us", "beta"):
        with contextlib.suppress(OSError):
            with open(f"/sys/module/tcp_cubic/parameters/{name}") as handle:
                cubic[name] = handle.read().strip()
    commit = first_line(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short=12", "HEAD"])
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": load_average(),
        "commit": commit,
        "iperf3": first_line(["iperf3", "--version"]),
        "sockperf": first_line(["sockperf", "--version"]),
        "sysctls": sysctls,
        "tcp_cubic": cubic,
        "config_hz": kernel_config_hz(),
    }


#: A network namespace's default congestion control, which new sockets start with.
CC_SYSCTL = "net.ipv4.tcp_congestion_control"
#: The congestion controls a namespace other than the init namespace may make its
#: default (and an unprivileged process may select); one list for the whole machine.
ALLOWED_CC_PATH = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")


@contextlib.contextmanager
def congestion_control_allowed(name: Optional[str], path: Path = ALLOWED_CC_PATH) -> Iterator[list[str]]:
    """Let namespaces make ``name`` their default congestion control while the block runs.

    Linux refuses ``net.ipv4.tcp_congestion_control`` in a namespace other
    than the init namespace for a congestion control missing from
    ``net.ipv4.tcp_allowed_congestion_control`` (``EPERM``:
    ``tcp_set_default_congestion_control`` accepts only those flagged
    ``TCP_CONG_NON_RESTRICTED`` there), and the list is one for the whole
    machine, set from the init namespace. The block runs with ``name`` added
    to the list (yields the list as it was); the list is written back as it
    was when the block ends, errors included. A namespace's default stays
    what it was set to after that: new sockets take it without the check.
    ``None``, or a name already allowed, changes nothing."""
    before = path.read_text().split() if name else []
    if not name or name in before:
        yield before
        return
    try:
        path.write_text(" ".join(before + [name]) + "\n")
    except OSError as exc:
        raise LabError(f"cannot allow congestion control {name!r} in {path}: {exc}") from None
    try:
        yield before
    finally:
        path.write_text(" ".join(before) + "\n")


def kernel_config_hz() -> Optional[int]:
    """The running kernel's ``CONFIG_HZ`` (jiffies per second, which Linux CUBIC
    counts time in), from /proc/config.gz or /boot/config-RELEASE; None if neither says."""
    import gzip
    import platform

    for path, opener in ((Path("/proc/config.gz"), gzip.open), (Path(f"/boot/config-{platform.release()}"), open)):
        with contextlib.suppress(OSError, ValueError):
            with opener(path, "rt") as handle:  # type: ignore[operator]
                for line in handle:
                    if line.startswith("CONFIG_HZ="):
                        return int(line.split("=", 1)[1])
    return None
