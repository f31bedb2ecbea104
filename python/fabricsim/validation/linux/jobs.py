"""What the lab runs and what a run gives back: iperf3 clients (:class:`Iperf3Job`), sized
transfers (:class:`Transfer`), and everything measured around one set of them
(:class:`TrafficRun`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from fabricsim.validation.linux.parsers import FlowRecord, LinkCounters, QdiscStats
from fabricsim.validation.linux.probes import CpuSnapshot, ReaderStats
from fabricsim.validation.linux.topology import LabError


@dataclass(frozen=True)
class Iperf3Job:
    """One iperf3 client (one instance) from ``src`` to a server on ``dst``.

    TCP by default (``cc``: reno, cubic, ...; None keeps the namespace's
    default), ``streams`` parallel streams (``-P``). Either ``duration_s``
    (``-t``) or ``bytes`` (``-n``, the job's total over its streams) sets the
    length. ``udp_rate_bps`` makes it UDP at that rate with ``udp_length``-byte
    datagrams. ``tunnel`` sends to ``dst``'s tunnel address instead of its
    link address. ``start_delay_s`` starts this client later than the others.
    ``cpu`` pins the client and its server to that CPU (``taskset``).
    """

    src: str
    dst: str
    cc: Optional[str] = None
    streams: int = 1
    duration_s: Optional[float] = 10.0
    bytes: Optional[int] = None
    udp_rate_bps: Optional[int] = None
    udp_length: int = 1400
    mss: Optional[int] = None
    window: Optional[int] = None
    interval_s: float = 1.0
    tunnel: bool = False
    start_delay_s: float = 0.0
    cpu: Optional[int] = None

    def pinned(self, argv: list[str]) -> list[str]:
        """``argv`` run under ``taskset -c cpu`` when the job is pinned to a CPU."""
        return ["taskset", "-c", str(self.cpu), *argv] if self.cpu is not None else argv

    def argv(self, address: str, port: int) -> list[str]:
        argv = ["iperf3", "-c", address, "-p", str(port), "-J", "-P", str(self.streams), "-i", str(self.interval_s)]
        if self.bytes is not None:
            argv += ["-n", str(self.bytes)]
        elif self.duration_s is not None:
            argv += ["-t", f"{self.duration_s:g}"]
        if self.udp_rate_bps is not None:
            argv += ["-u", "-b", str(self.udp_rate_bps), "-l", str(self.udp_length)]
        elif self.cc:
            argv += ["-C", self.cc]
        if self.mss is not None:
            argv += ["-M", str(self.mss)]
        if self.window is not None:
            argv += ["-w", str(self.window)]
        return self.pinned(argv)


@dataclass(frozen=True)
class Transfer:
    """One sized TCP transfer of ``bytes`` from ``src`` to ``dst`` (:meth:`Lab.transfers`)."""

    src: str
    dst: str
    bytes: int
    cc: Optional[str] = None
    tunnel: bool = False
    start_delay_s: float = 0.0
    cpu: Optional[int] = None

    def pinned(self, argv: list[str]) -> list[str]:
        return ["taskset", "-c", str(self.cpu), *argv] if self.cpu is not None else argv


@dataclass
class TrafficRun:
    """Everything measured around one set of simultaneous jobs (iperf3 or sized transfers).

    Counters (qdiscs, links, nstat) are deltas over the run. ``cpu`` is the
    system-wide CPU over the run (other users of the machine included);
    ``iperf3_cpu_s`` is the CPU time of the iperf3 processes themselves
    (sender + receiver, as iperf3 reports them), which includes the softirq
    work done in their context (0 for sized transfers).
    """

    jobs: list[Iperf3Job]
    flows: list[FlowRecord]
    qdiscs: list[QdiscStats]
    links: dict[str, dict[str, LinkCounters]]
    nstat: dict[str, dict[str, int]]
    cpu: CpuSnapshot
    iperf3_cpu_s: float
    wall_s: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    softnet_drops: int
    qdisc_samples: list[tuple[float, str, str, int, int]] = field(default_factory=list)
    """(time s since start, node, dev, backlog bytes, drops) of the sampled leaf queues."""
    devices: dict[str, dict[str, str]] = field(default_factory=dict)
    """node -> {peer node: device name}, to find a link end's counters."""
    readers: list[ReaderStats] = field(default_factory=list)
    """How each iperf3 server read its socket (/proc counters over the run); empty for sized transfers."""
    writers: list[ReaderStats] = field(default_factory=list)
    """The same counters of each iperf3 client (the senders: ``write_syscalls``, ``bytes_written``)."""
    client_starts_s: list[float] = field(default_factory=list)
    """When each job's client process was launched, seconds after the first (iperf3 runs)."""
    socket_samples: list[tuple[float, str, Any]] = field(default_factory=list)
    """(time s since start, node, :class:`~fabricsim.validation.linux.parsers.SocketMemory`) of the
    polled nodes' sockets (``Lab.iperf3(socket_nodes=...)``)."""

    @property
    def total_goodput_bps(self) -> float:
        """Sum of the flows' goodputs; for sized jobs, all bytes received over the job completion time."""
        completion = self.job_completion_s
        if completion:
            return 8.0 * sum(flow.bytes_received for flow in self.flows) / completion
        return sum(flow.goodput_bps for flow in self.flows)

    @property
    def total_retransmits(self) -> int:
        return sum(flow.retransmits for flow in self.flows)

    @property
    def job_completion_s(self) -> Optional[float]:
        times = [flow.completion_s for flow in self.flows]
        return max(times) if times and all(t is not None for t in times) else None  # type: ignore[type-var]

    def qdisc(self, node: str, peer_or_dev: str, leaf: bool = True) -> QdiscStats:
        """The leaf (queue) qdisc, or the root one, on ``node``'s egress towards a peer node or device."""
        dev = self.devices.get(node, {}).get(peer_or_dev, peer_or_dev)
        matches = [q for q in self.qdiscs if q.node == node and q.dev == dev]
        if not matches:
            raise LabError(f"no qdisc recorded on {node} towards {peer_or_dev}")
        leaves = [q for q in matches if q.parent != "root"] if leaf else [q for q in matches if q.parent == "root"]
        return (leaves or matches)[-1]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["total_goodput_bps"] = self.total_goodput_bps
        out["total_retransmits"] = self.total_retransmits
        out["job_completion_s"] = self.job_completion_s
        return out


#: The result of :meth:`Lab.iperf3` (and :meth:`Lab.transfers`).
Iperf3Run = TrafficRun
