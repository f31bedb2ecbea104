"""RFC 2544 benchmarks of the devices between two hosts: throughput, latency,
frame loss rate and back-to-back frames, per frame size.

The scenario supplies the network (topology, devices, hosts); its traffic is
replaced by the test stream from the tester port ``src`` to ``dst`` (default:
the first two hosts). Each measurement is a *trial*: a constant-rate stream of
one frame size for ``trial`` (RFC 2544 section 23: send, then wait for the
residual frames), after which the frames received are counted.

- **Throughput** (26.1): the highest offered rate at which every frame sent
  is received, by binary search between 0 and the line rate of ``src``,
  starting at the line rate, to ``resolution`` of the line rate.
- **Latency** (26.2): one trial at the throughput rate (or ``rate``); every
  frame is timed. The RFC 1242 latency of the devices between the tester
  ports is first bit in to first bit out (FIFO) for bit-forwarding devices
  and last bit in to first bit out (LIFO) for store-and-forward ones (LIFO
  if any device on the path stores and forwards). The end-to-end figure
  (creation at the source host to delivery to the destination host,
  serialization and host latency included) is reported beside it, with its
  closed-form breakdown (:mod:`fabricsim.experiments.path_latency`).
- **Frame loss rate** (26.3): ``(sent - received) / sent`` at 100% of the line
  rate, then in steps of ``loss_step`` down, until two successive trials lose
  nothing.
- **Back-to-back** (26.4): the longest burst at line rate (minimum gap) that
  passes without a drop, by doubling then bisection, up to ``max_burst``.

**Trials in simulated time.** RFC 2544 trials last 60 s (throughput) or 2 s
(back-to-back), long enough for any DUT buffer to overflow at a rate above
what the device sustains. A simulated trial is much shorter (``trial``,
default 10 ms), so a frame counts as received only if it arrives within
``wait`` after the end of the trial (RFC 2544 section 23 waits 2 s). The
default ``wait`` is the frame's unloaded one-way latency plus one more
serialization on the slowest link of the path: at a rate the device sustains
no queue builds and the last frame arrives within that time; an overload
leaves a backlog that does not drain in time. The rate found is then at most
``wait / trial`` (plus ``resolution``) above the device's sustained capacity
(0.05% for a 5 us path and 10 ms trials). ``trial: 60s, wait: 2s`` gives the RFC's literal procedure.
Back-to-back counts drops only (frames waiting in a buffer are the point).

**Tester ports are ideal.** These four tests measure the devices between the
tester ports (RFC 1242 latency is between them), so they run with the hosts'
datapath model removed: each host is a NIC port at line rate plus the fixed
``network.host.latency``, subtracted exactly.

**End to end through the hosts** (``host_latency``, ``socket``; a scenario with
``network.host.model``, or ``stacks``): each series is a host stack
(:class:`Stack`): the scenario's own model, or a preset (``linux-kernel``,
``kernel-bypass``) on the scenario's NIC.

- ``host_latency``: a UDP ping-pong (one message outstanding, sockperf-like)
  of one datagram per frame size; the one-way latency is half the round trip,
  and each part (stack, NIC DMA, interrupt wait per host; propagation,
  serialization, header time and device latency in the fabric) is reported as
  simulated (the core's ``host_latency`` components) and in closed form
  (:func:`fabricsim.experiments.path_latency.end_to_end`).
- ``socket``: a streaming application sending messages of ``frame - 46`` bytes
  as fast as its socket takes them for one trial; MB/s of messages received.
  UDP: one datagram per message, offered at line rate; the closed form is the
  smallest of the wire's goodput, ``message / CPU time per message`` on the
  sending core and on the receiving core (polls of many frames under load, so
  the interrupt's cost is spread over them) and the NIC's DMA per byte.
  TCP (``preset:tcp``): one iperf3-like stream whose application writes
  ``message`` bytes per call (``syscall`` per message); no closed form.

Frame sizes above the smallest ``mtu`` of a device on the path are skipped.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence, Union

import polars as pl

from fabricsim import units
from fabricsim.experiments.path_latency import (
    HOST_PARTS,
    end_to_end,
    host_terms,
    path_hops,
    path_nodes,
    serialization_ps,
    tester_terms,
    unloaded_latency,
)
from fabricsim.errors import ScenarioError
from fabricsim.runner import run
from fabricsim.schema import Scenario, from_dict, load
from fabricsim.schema._base import U64_MAX

__all__ = [
    "DEVICE_TESTS",
    "FRAME_SIZES",
    "HOST_TESTS",
    "TESTS",
    "UDP_OVERHEAD",
    "Settings",
    "Stack",
    "Target",
    "parse_stack",
    "rfc2544",
    "targets",
]

FRAME_SIZES = (64, 128, 256, 512, 1024, 1280, 1518, 2176, 9216)
"""RFC 2544 section 9.1 Ethernet sizes, plus 2176 B and 9216 B (jumbo)."""
DEVICE_TESTS = ("throughput", "latency", "loss", "back_to_back")
"""RFC 2544 section 26's tests of the devices between two tester ports (ideal hosts)."""
HOST_TESTS = ("host_latency", "socket")
"""End-to-end tests through the hosts' datapath model: UDP ping-pong latency, socket throughput."""
TESTS = DEVICE_TESTS + HOST_TESTS
TCP_SOCKET_TRIAL_PS = 10_000_000_000
"""The shortest trial of a TCP socket-throughput point (10 ms)."""
MAX_MESSAGES = 10_000_000
"""Most ping-pong messages per frame size (host_latency): each is a row of the ping_pong table."""
UDP_OVERHEAD = 46
"""Bytes of an Ethernet frame that are not UDP payload: Ethernet header and FCS (18), IPv4 (20), UDP (8)."""


@dataclass(frozen=True)
class Settings:
    """How the trials are run (times in picoseconds, rates as fractions of the line rate)."""

    trial_ps: int = 10_000_000_000
    wait_ps: Optional[int] = None  # None: the frame's unloaded latency + one serialization on the slowest link
    resolution: float = 0.001
    loss_step: float = 0.1
    latency_rate: Optional[float] = None  # None: the throughput rate
    max_burst: Optional[int] = None  # None: the frames of one trial at line rate
    messages: int = 20  # ping-pong messages per frame size (host_latency)

    def __post_init__(self) -> None:
        """Refuse a setting out of range with :class:`~fabricsim.errors.ScenarioError` naming it."""
        whole = {
            "trial_ps": (self.trial_ps, 1, U64_MAX),
            "wait_ps": (self.wait_ps, 0, U64_MAX),
            "max_burst": (self.max_burst, 1, U64_MAX),
            "messages": (self.messages, 1, MAX_MESSAGES),
        }
        for name, (value, least, most) in whole.items():
            if value is None and name in ("wait_ps", "max_burst"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
                raise ScenarioError([(name, f"must be a whole number from {least:,} to {most:,} (got {value!r})")])
        for name, fraction in (("resolution", self.resolution), ("loss_step", self.loss_step),
                               ("latency_rate", self.latency_rate)):
            if fraction is None and name == "latency_rate":
                continue
            if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
                raise ScenarioError([(name, f"must be a fraction of the line rate > 0 and <= 1 (got {fraction!r})")])


@dataclass(frozen=True)
class Stack:
    """A host stack series of the end-to-end tests: ``preset`` (``None``: the scenario's own
    ``network.host.model``) on the scenario's NIC, and the transport (``udp`` or ``tcp``)."""

    label: str
    preset: Optional[str] = None
    protocol: str = "udp"


def parse_stack(text: str) -> Stack:
    """``scenario``, ``PRESET`` or ``PRESET:udp|tcp`` (``scenario:tcp`` too)."""
    from fabricsim import hosts

    name, _, protocol = text.partition(":")
    protocol = protocol or "udp"
    if protocol not in ("udp", "tcp"):
        raise ValueError(f"stack {text!r}: transport must be udp or tcp")
    if name != "scenario" and name not in hosts.names():
        raise ValueError(f"stack {text!r}: unknown host model {name!r}; allowed: scenario, {', '.join(hosts.names())}")
    label = f"{'scenario' if name == 'scenario' else name} {protocol}"
    return Stack(label, None if name == "scenario" else name, protocol)


@dataclass(frozen=True)
class Target:
    """The network under test and its two tester ports."""

    label: str
    base: dict[str, Any]
    src: str
    dst: str
    #: Name the series after the devices between the tester ports (several pairs were given).
    by_path: bool = False


def _hosts(sc: Scenario) -> list[str]:
    """Host names in the order the core builds them (enough for the default tester ports)."""
    topo = sc.topology
    if topo.kind == "explicit":
        return [n.name for n in topo.nodes if n.kind == "host"]
    if topo.kind == "dumbbell":
        return [f"left{i}" for i in range(topo.left)] + [f"right{i}" for i in range(topo.right)]
    if topo.kind == "star":
        return [f"h{i}" for i in range(topo.hosts)]
    return ["h0", "h1"]


def targets(
    scenario: Union[Scenario, str, "os.PathLike[str]"],
    devices: Sequence[Optional[str]] = (None,),
    pairs: Sequence[Optional[tuple[str, str]]] = (None,),
    overrides: Sequence[str] = (),
) -> list[Target]:
    """One target per (device preset, tester pair): ``None`` keeps the scenario's switches / its first two hosts."""
    sc = scenario if isinstance(scenario, Scenario) else load(scenario, overrides)
    doc = sc.source_data or sc.model_dump(mode="json", by_alias=True)
    hosts = _hosts(sc)
    out = []
    for device in devices:
        base = copy.deepcopy(doc)
        if device is not None:
            network = base.setdefault("network", {}) or {}
            base["network"] = network
            network["switch"] = {**(network.get("switch") or {}), "device": device}
        for pair in pairs:
            src, dst = pair if pair is not None else (hosts[0], hosts[1])
            # Several pairs: each series is also named after the devices between its tester ports.
            out.append(Target(device or ("" if len(pairs) > 1 else sc.name), base, src, dst, len(pairs) > 1))
    return out


class _Bench:
    """Trials of one target."""

    def __init__(self, target: Target, settings: Settings) -> None:
        self.t = target
        self.s = settings
        probe = self._run(64, traffic={"kind": "burst", "frames": 1}, duration=10**6)
        self.resolved = probe.scenario.to_resolved()
        self.nodes = path_nodes(probe.links, target.src, target.dst)
        self.hops = path_hops(self.resolved, probe.links, self.nodes)
        self.line_bps = self.hops[0].rate_bps
        self.overhead = int(self.resolved["network"]["ethernet_overhead_bytes"])
        mtus = [int(h.device["mtu_bytes"]) for h in self.hops if h.device is not None and h.device.get("mtu_bytes")]
        self.mtu = min(mtus) if mtus else None
        self.devices = list(self.nodes[1:-1])
        path = " ".join(self.devices) or f"{target.src}->{target.dst}"
        self.label = " ".join(x for x in (target.label, path if target.by_path else "") if x)
        modes = [h.device.get("forwarding") for h in self.hops if h.device is not None]
        self.method = "fifo" if modes and all(m == "cut_through" for m in modes) else "lifo"

    def _doc(self, duration: int, host_model: Any = None) -> dict[str, Any]:
        """The target's scenario for one trial: tester ports without a host datapath model unless
        ``host_model`` is given (then it replaces the scenario's)."""
        doc = copy.deepcopy(self.t.base)
        doc["duration"] = units.format_time(duration)
        network = doc.setdefault("network", {}) or {}
        doc["network"] = network
        host = dict(network.get("host") or {})
        host.pop("model", None)
        if host_model is not None:
            host["model"] = host_model
        network["host"] = host
        doc["stats"] = {**(doc.get("stats") or {}), "queue_sample_interval": "0s", "throughput_interval": "0s"}
        return doc

    def _run(self, frame: int, traffic: dict[str, Any], duration: int, wait: Optional[int] = None) -> Any:
        doc = self._doc(duration)
        doc["drain"] = True
        if wait is not None:
            doc["drain_limit"] = units.format_time(max(wait, 1))
        doc["traffic"] = [{"name": "rfc2544", "src": [self.t.src], "dst": self.t.dst, "frame_size": f"{frame}B",
                           **traffic}]
        return run(from_dict(doc))

    def fits(self, frame: int) -> bool:
        return self.mtu is None or frame <= self.mtu

    def wait(self, frame: int) -> int:
        """RFC 2544 section 23's wait after a trial; by default the frame's unloaded latency plus
        one more serialization on the slowest link of the path."""
        if self.s.wait_ps is not None:
            return self.s.wait_ps
        slowest = min(h.rate_bps for h in self.hops)
        return unloaded_latency(self.resolved, self.hops, frame).total_ps + serialization_ps(
            frame + self.overhead, slowest
        )

    def trial(self, frame: int, fraction: float) -> dict[str, Any]:
        """A constant-rate trial at ``fraction`` of the line rate: the flow's row of the flows table."""
        bps = max(1, round(fraction * self.line_bps))
        result = self._run(frame, {"kind": "udp_cbr", "rate": bps}, self.s.trial_ps, self.wait(frame))
        return result.flows.row(0, named=True)

    def passes(self, frame: int, fraction: float) -> bool:
        row = self.trial(frame, fraction)
        return row["packets_delivered"] == row["packets_sent"]

    def frames_per_s(self, frame: int, fraction: float) -> float:
        return fraction * self.line_bps / ((frame + self.overhead) * 8)

    # ------------------------------------------------------------------ tests

    def throughput(self, frame: int) -> dict[str, Any]:
        trials = 1
        if self.passes(frame, 1.0):
            lo = 1.0
        else:
            lo, hi = 0.0, 1.0
            while hi - lo > self.s.resolution:
                mid = (lo + hi) / 2
                trials += 1
                if self.passes(frame, mid):
                    lo = mid
                else:
                    hi = mid
        fps = self.frames_per_s(frame, lo)
        return {
            "frame_bytes": frame,
            "load": lo,
            "frames_per_s": fps,
            "bits_per_s": lo * self.line_bps,
            "line_frames_per_s": self.frames_per_s(frame, 1.0),
            "udp_payload_MBps": fps * (frame - UDP_OVERHEAD) / 1e6,
            "trials": trials,
        }

    def latency(self, frame: int, fraction: float) -> dict[str, Any]:
        row = self.trial(frame, fraction)
        model = unloaded_latency(self.resolved, self.hops, frame)
        fifo, lifo = tester_terms(self.resolved, self.hops, frame)
        minus = fifo if self.method == "fifo" else lifo
        mean = row["latency_mean_ps"]
        return {
            "frame_bytes": frame,
            "load": fraction,
            "method": self.method,
            "latency_ps": mean - minus if mean is not None else None,
            "latency_min_ps": row["latency_min_ps"] - minus if row["latency_min_ps"] is not None else None,
            "latency_max_ps": row["latency_max_ps"] - minus if row["latency_max_ps"] is not None else None,
            "e2e_mean_ps": mean,
            "e2e_min_ps": row["latency_min_ps"],
            "e2e_max_ps": row["latency_max_ps"],
            "unloaded_ps": model.total_ps,
            **{k: v for k, v in model.as_dict().items() if k != "total_ps"},
            "queueing_ps": mean - model.total_ps if mean is not None else None,
            "frames": row["packets_delivered"],
        }

    def loss(self, frame: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        clean = 0
        step = 0
        while clean < 2:
            fraction = round(1.0 - step * self.s.loss_step, 12)
            if fraction <= 0:
                break
            row = self.trial(frame, fraction)
            sent, got = row["packets_sent"], row["packets_delivered"]
            lost = sent - got
            rows.append({"frame_bytes": frame, "load": fraction, "frames_sent": sent, "frames_received": got,
                         "loss_percent": 100.0 * lost / sent if sent else 0.0})
            clean = clean + 1 if lost == 0 else 0
            step += 1
        return rows

    def burst_passes(self, frame: int, frames: int) -> bool:
        span = frames * serialization_ps(frame + self.overhead, self.line_bps) + 1_000_000
        result = self._run(frame, {"kind": "burst", "frames": frames}, span)
        return int(result.summary["packets_dropped"]) == 0 and bool(result.summary["drained"])

    def back_to_back(self, frame: int) -> dict[str, Any]:
        cap = self.s.max_burst or max(1, int(self.s.trial_ps // serialization_ps(frame + self.overhead, self.line_bps)))
        trials = 1
        if self.burst_passes(frame, cap):
            lo, capped = cap, True
        else:
            capped = False
            lo, hi = 0, 1
            while hi < cap:
                trials += 1
                if not self.burst_passes(frame, hi):
                    break
                lo, hi = hi, hi * 2
            hi = min(hi, cap)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                trials += 1
                if self.burst_passes(frame, mid):
                    lo = mid
                else:
                    hi = mid
        return {
            "frame_bytes": frame,
            "frames": lo,
            "burst_ps": lo * serialization_ps(frame + self.overhead, self.line_bps),
            "capped": capped,
            "trials": trials,
        }


class _Host:
    """The end-to-end tests of one target through one host stack."""

    def __init__(self, bench: _Bench, stack: Stack) -> None:
        self.b = bench
        self.stack = stack
        own = ((bench.t.base.get("network") or {}).get("host") or {}).get("model")
        if stack.preset is None:
            if own is None:
                raise ValueError("the end-to-end tests need hosts with a datapath model: give network.host.model "
                                 "in the scenario, or a stack (e.g. kernel-bypass, linux-kernel)")
            self.model: Any = copy.deepcopy(own)
        else:
            # The preset's stack on the scenario's NIC (its DMA figures), when it names one.
            self.model = {"preset": stack.preset}
            if isinstance(own, dict) and own.get("nic"):
                self.model["nic"] = copy.deepcopy(own["nic"])
        self.resolved = from_dict(self._doc(10**6, [])).to_resolved()
        self.host = self.resolved["network"]["host"]["model"]

    def _doc(self, duration: int, traffic: list[dict[str, Any]], message: Optional[int] = None) -> dict[str, Any]:
        model = copy.deepcopy(self.model)
        if message is not None:
            model = {**({"preset": model} if isinstance(model, str) else model), "message_size": f"{message}B"}
        doc = self.b._doc(duration, model)
        doc["traffic"] = traffic
        return doc

    def tcp_overhead(self) -> int:
        """Bytes of a TCP segment's frame around its payload (TCP/IP header with options, L2)."""
        tcp = self.resolved.get("tcp") or {}
        return int(tcp.get("header_bytes", 52)) + int(tcp.get("l2_bytes", 18))

    def latency(self, frame: int, messages: int) -> Optional[dict[str, Any]]:
        """A ping-pong of ``frame``-byte datagrams (TCP: segments): half the round trip, and where
        the time goes. ``None`` for a TCP frame that cannot carry one message in one segment
        (too small for a byte of payload, or larger than ``tcp.mtu``)."""
        tcp = self.stack.protocol == "tcp"
        message = frame - (self.tcp_overhead() if tcp else UDP_OVERHEAD)
        tcp_cfg = self.resolved.get("tcp") or {}
        if message < 1 or (tcp and frame - int(tcp_cfg.get("l2_bytes", 18)) > int(tcp_cfg.get("mtu_bytes", 1500))):
            return None
        pp = {"kind": "ping_pong", "name": "rfc2544", "src": self.b.t.src, "dst": self.b.t.dst,
              "message_size": f"{message}B", "messages": messages, "protocol": self.stack.protocol}
        # Long enough for every message even through slow stacks (1 ms each at most).
        result = run(from_dict(self._doc(messages * 10**9, [pp])))
        row = result.ping_pong.row(0, named=True)
        model = end_to_end(self.resolved, self.b.hops, frame, self.stack.protocol)
        _, detail = host_terms(self.host, frame, self.stack.protocol, (self.b.hops[0].rate_bps, self.b.hops[-1].rate_bps))
        lat = result.host_latency.filter(pl.col("flow_id") == 0)
        sim = dict(zip(lat["component"].cast(pl.Utf8).to_list(), lat["mean_ps"].to_list()))
        one_way = result.flows.row(0, named=True)["latency_mean_ps"]
        out: dict[str, Any] = {
            "stack": self.stack.label,
            "frame_bytes": frame,
            "message_bytes": message,
            "messages": row["messages"],
            "latency_ps": row["latency_mean_ps"],
            "latency_min_ps": row["latency_min_ps"],
            "latency_max_ps": row["latency_max_ps"],
            "closed_form_ps": model.total_ps,
            **{k: v for k, v in model.as_dict().items() if k != "total_ps"},
        }
        host_sim = 0.0
        for part, component in HOST_PARTS.items():
            out[f"sim_{part}"] = sim.get(component, 0.0)
            host_sim += sim.get(component, 0.0)
        host_sim += sim.get("tx_cpu_wait", 0.0) + sim.get("rx_cpu_wait", 0.0)
        fabric = sum(v for k, v in model.parts.items() if k not in HOST_PARTS)
        out["fabric_ps"] = fabric
        out["sim_fabric_ps"] = one_way - host_sim if one_way is not None else None
        out.update({f"detail_{k}": v for k, v in detail.items()})
        return out

    def socket(self, frame: int, trial_ps: int) -> dict[str, Any]:
        """A streaming application's MB/s of ``frame - 46``-byte messages over one trial."""
        message = frame - UDP_OVERHEAD
        head = {"stack": self.stack.label, "frame_bytes": frame, "message_bytes": message}
        if self.stack.protocol == "tcp":
            # A stream needs round trips to open its window, and GRO hands large skbs to a slow
            # receiver at once: at least 10 ms, the first fifth left out (iperf3's omit).
            trial_ps = max(trial_ps, TCP_SOCKET_TRIAL_PS)
            omit = trial_ps // 5
            app = {"kind": "iperf3", "name": "rfc2544", "src": self.b.t.src, "dst": self.b.t.dst,
                   "duration": units.format_time(trial_ps), "omit": units.format_time(omit)}
            result = run(from_dict(self._doc(trial_ps, [app], message)))
            gbps = float(result.iperf3["gbps"].sum())
            return {**head, "MBps": gbps * 1e9 / 8 / 1e6, "closed_form_MBps": None, "limit": None, "error": None}
        # As many messages as the wire carries in one trial, offered at line rate; the rate is taken
        # between the first delivery and the last (the run drains), so that neither the path's latency
        # nor a poll still in progress at the end of a trial bends it.
        frames = max(2, int(trial_ps // serialization_ps(frame + self.b.overhead, self.b.line_bps)))
        app = {"kind": "udp_cbr", "name": "rfc2544", "src": [self.b.t.src], "dst": self.b.t.dst,
               "frame_size": f"{frame}B", "rate": self.b.line_bps, "max_frames": frames}
        doc = self._doc(trial_ps, [app])
        doc["drain"] = True
        result = run(from_dict(doc))
        row = result.flows.row(0, named=True)
        got = int(row["packets_delivered"])
        first = row["start_ps"] + row["latency_min_ps"]
        mbps = (got - 1) * message / ((row["end_ps"] - first) * 1e-12) / 1e6 if got > 1 else 0.0
        bounds = self.socket_bounds(frame)
        limit = min(bounds, key=lambda k: bounds[k])
        closed = bounds[limit]
        return {**head, "MBps": mbps, "closed_form_MBps": closed, "limit": limit,
                "error": (mbps - closed) / closed, **{f"{k}_MBps": v for k, v in bounds.items()}}

    def socket_bounds(self, frame: int) -> dict[str, float]:
        """MB/s of messages each part of the path sustains (UDP, one datagram per message)."""
        message = frame - UDP_OVERHEAD
        exact, detail = host_terms(self.host, frame)
        # Under load the receive core polls many frames per interrupt: the interrupt's cost is spread
        # out (charged once while polls follow each other), so a frame costs its stages only.
        rx_ps = exact["stack_rx_ps"] - detail["stack_rx_irq_cost_ps"]
        nic = self.host["nic"]
        dma_ps = max(frame * int(nic["tx_per_byte_fs"]), frame * int(nic["rx_per_byte_fs"])) / 1000
        out = {
            "wire": self.b.frames_per_s(frame, 1.0) * message / 1e6,
            "tx_core": message / (exact["stack_tx_ps"] * 1e-12) / 1e6,
            "rx_core": message / (rx_ps * 1e-12) / 1e6 if rx_ps > 0 else float("inf"),
        }
        if dma_ps > 0:
            out["dma"] = message / (dma_ps * 1e-12) / 1e6
        return out



def rfc2544(
    scenario: Union[Scenario, str, "os.PathLike[str]"],
    tests: Iterable[str] = DEVICE_TESTS,
    frame_sizes: Sequence[int] = FRAME_SIZES,
    devices: Sequence[Optional[str]] = (None,),
    pairs: Sequence[Optional[tuple[str, str]]] = (None,),
    settings: Settings = Settings(),
    overrides: Sequence[str] = (),
    stacks: Sequence[Union[Stack, str]] = ("scenario",),
) -> dict[str, pl.DataFrame]:
    """Run the RFC 2544 ``tests`` for each frame size on each target; returns one table per test
    (``throughput``, ``latency``, ``loss``, ``back_to_back``, ``host_latency``, ``socket``), each
    with ``device``, ``src``, ``dst`` and ``devices`` (the nodes between the tester ports) columns
    first; the end-to-end tables have one series per stack of ``stacks`` (``stack`` column).
    ``host_latency`` runs a ping-pong over each stack's transport (TCP: frames of one segment)."""
    wanted = list(dict.fromkeys(tests))
    unknown = [t for t in wanted if t not in TESTS]
    if unknown:
        raise ValueError(f"unknown test {unknown[0]!r}; allowed: {', '.join(TESTS)}")
    series = [parse_stack(x) if isinstance(x, str) else x for x in stacks]
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in wanted}
    skipped: list[dict[str, Any]] = []
    for target in targets(scenario, devices, pairs, overrides):
        bench = _Bench(target, settings)
        head = {"device": bench.label, "src": target.src, "dst": target.dst, "devices": " ".join(bench.devices)}
        ends = [_Host(bench, st) for st in series] if any(t in HOST_TESTS for t in wanted) else []
        for frame in frame_sizes:
            if not bench.fits(frame):
                skipped.append({**head, "frame_bytes": frame, "mtu_bytes": bench.mtu})
                continue
            found = None
            if "throughput" in wanted:
                found = bench.throughput(frame)
                rows["throughput"].append({**head, **found})
            if "latency" in wanted:
                rate = settings.latency_rate
                if rate is None:
                    rate = (found or bench.throughput(frame))["load"]
                rows["latency"].append({**head, **bench.latency(frame, rate)})
            if "loss" in wanted:
                rows["loss"].extend({**head, **r} for r in bench.loss(frame))
            if "back_to_back" in wanted:
                rows["back_to_back"].append({**head, **bench.back_to_back(frame)})
            for end in ends:
                if "host_latency" in wanted:
                    lat = end.latency(frame, settings.messages)
                    if lat is None:
                        skipped.append({**head, "frame_bytes": frame, "stack": end.stack.label,
                                        "reason": "not one TCP segment with payload (tcp.mtu)"})
                    else:
                        rows["host_latency"].append({**head, **lat})
                if "socket" in wanted:
                    rows["socket"].append({**head, **end.socket(frame, settings.trial_ps)})
    out = {name: pl.DataFrame(r) for name, r in rows.items()}
    out["skipped"] = pl.DataFrame(skipped) if skipped else pl.DataFrame()
    return out
