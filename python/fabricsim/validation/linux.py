"""A real-Linux lab: small topologies of network namespaces run as the reference for fabricsim.

A topology is plain data (a dict, or YAML): hosts and routers become network
namespaces, links become veth pairs, and a link end can carry an egress
configuration: a shaper (``htb`` or ``tbf``) at a rate, with a queue under it
(``bfifo`` in bytes, ``pfifo`` in packets, or ``red``). Optional VXLAN tunnels
run over the links, and optional stateful firewalls (nftables connection
tracking) sit in chosen namespaces::

    topology = Topology.from_dict({
        "hosts": ["s0", "s1", "rx"],
        "routers": ["r"],
        "links": [
            {"a": "s0", "b": "r"},
            {"a": "s1", "b": "r"},
            {"a": "r", "b": "rx", "mtu": 1500,
             "egress": {"r": {"rate": "1Gbps", "shaper": "htb", "queue": "bfifo", "limit": "250KB"}}},
        ],
    })
    with Lab(topology) as lab:
        run = lab.iperf3([Iperf3Job(src="s0", dst="rx", cc="cubic", duration_s=20),
                          Iperf3Job(src="s1", dst="rx", cc="cubic", duration_s=20)])
        run.total_goodput_bps, run.flows[0].retransmits, run.qdisc("r", "rx").drops

Addresses come from the benchmarking range 198.18.0.0/15 (RFC 2544 / RFC 5735):
link ``i`` is ``198.18.i.0/24`` (end ``a`` is ``.1``, end ``b`` is ``.2``), tunnel
``j`` is ``198.19.j.0/24``. Every namespace is named ``fslab-<pid>-<token>-<node>``;
:meth:`Lab.close` (also on errors and Ctrl-C) ends the processes started in
them and deletes them, and :func:`sweep_stale` deletes the namespaces of lab
processes that died without cleaning up. Segmentation and receive offloads
(TSO, GSO, GRO) are off on every veth and VXLAN device, so queues and counters
see real packets (Linux TCP still builds GSO packets internally and splits
them in software before the device). Received packets are spread over the
CPUs by flow (``steering: flow``), so that a flow is not reordered between
CPUs (see :class:`Topology`).

Everything here needs root and the tools in :data:`TOOLS`;
:func:`unavailable_reason` says why the lab cannot run (tests skip on it). The
parsers (:func:`parse_iperf3`, :func:`parse_tc_qdiscs`, :func:`parse_ip_link`,
:func:`parse_sockperf`, :func:`parse_nstat`) work on recorded output without root.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from fabricsim.errors import FabricsimError, unknown_key, unknown_value
from fabricsim.units import parse_rate, parse_size
from fabricsim.validation import sched_trace

__all__ = [
    "CpuSnapshot",
    "Egress",
    "FlowRecord",
    "Iperf3Job",
    "Iperf3Run",
    "TrafficRun",
    "Transfer",
    "Lab",
    "LabError",
    "LatencyRecord",
    "Link",
    "LinkCounters",
    "QdiscStats",
    "Topology",
    "Tunnel",
    "TOOLS",
    "congestion_control_allowed",
    "cpu_snapshot",
    "environment",
    "load_average",
    "parse_iperf3",
    "parse_ip_link",
    "parse_nstat",
    "parse_sockperf",
    "parse_tc_qdiscs",
    "qdisc_available",
    "sweep_stale",
    "unavailable_reason",
]

#: Namespace names start with this, then ``-<pid>-<token>-<node>``.
PREFIX = "fslab"
#: Command-line tools the lab runs.
TOOLS = ("ip", "tc", "ethtool", "iperf3", "sysctl")
SHAPERS = ("htb", "tbf")
QUEUES = ("bfifo", "pfifo", "red")
STEERING = ("flow", "none")
CONGESTION_CONTROLS = ("reno", "cubic", "bbr", "dctcp")
LINK_NET = ipaddress.ip_network("198.18.0.0/16")
TUNNEL_NET = ipaddress.ip_network("198.19.0.0/16")
VXLAN_PORT = 4789
#: Bytes VXLAN adds to the inner IP packet: outer IPv4 (20) + UDP (8) + VXLAN (8) + inner Ethernet (14).
VXLAN_OVERHEAD = 50
#: Ethernet header that a veth queue counts in each packet (no FCS, preamble or gap).
ETH_HEADER = 14
_NODE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,15}$")
_IPERF_BASE_PORT = 5201
_TRANSFER_BASE_PORT = 6201
_TRANSFER_LEAD_S = 1.0


class LabError(FabricsimError):
    """The lab cannot be built or a command in it failed (bad topology, missing tool, not root)."""


# --------------------------------------------------------------------------- availability


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


# --------------------------------------------------------------------------- topology description


def _issue(path: str, message: str) -> LabError:
    return LabError(f"{path}: {message}")


def _check_keys(data: Mapping[str, Any], allowed: Sequence[str], path: str) -> None:
    if not isinstance(data, Mapping):
        raise _issue(path, f"expected a mapping, got {type(data).__name__}")
    for key in data:
        if key not in allowed:
            raise _issue(f"{path}.{key}" if path else str(key), unknown_key(key, allowed))


def _quantity(parse: Callable[[Any], int], value: Any, path: str) -> int:
    try:
        return parse(value)
    except (ValueError, TypeError) as exc:
        raise _issue(path, str(exc)) from None


@dataclass(frozen=True)
class RedParams:
    """RED thresholds (bytes) and drop probability at ``max_bytes`` (tc-red(8)); ``ecn`` marks instead of dropping."""

    min_bytes: int
    max_bytes: int
    probability: float = 0.1
    avpkt: int = 1000
    ecn: bool = False


@dataclass(frozen=True)
class Egress:
    """What sits on one end of a link, on its transmit side.

    ``rate_bps`` shapes with ``shaper`` (``htb``: one class at rate = ceil;
    ``tbf``: token bucket) and ``burst_bytes`` of tokens (default: 10 frames of
    the link MTU or 100 us at the rate, whichever is larger). ``queue`` is the
    qdisc that holds the packets: ``bfifo`` (``limit`` in bytes, counted as
    IP packet + 14 B Ethernet header), ``pfifo`` (``limit`` in packets) or
    ``red`` (``limit`` in bytes, thresholds in ``red``). Without a rate the
    queue is the root qdisc and the veth sends as fast as the CPU lets it.
    """

    rate_bps: Optional[int] = None
    shaper: str = "htb"
    burst_bytes: Optional[int] = None
    queue: Optional[str] = None
    limit: Optional[int] = None
    red: Optional[RedParams] = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> "Egress":
        _check_keys(data, ("rate", "shaper", "burst", "queue", "limit", "red"), path)
        rate = _quantity(parse_rate, data["rate"], f"{path}.rate") if "rate" in data else None
        shaper = data.get("shaper", "htb")
        if shaper not in SHAPERS:
            raise _issue(f"{path}.shaper", unknown_value(shaper, SHAPERS))
        queue = data.get("queue")
        if queue is not None and queue not in QUEUES:
            raise _issue(f"{path}.queue", unknown_value(queue, QUEUES))
        limit = None
        if "limit" in data:
            if queue == "pfifo":
                limit = data["limit"]
                if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
                    raise _issue(f"{path}.limit", f"pfifo limit is a number of packets >= 1 (got {limit!r})")
            else:
                limit = _quantity(parse_size, data["limit"], f"{path}.limit")
        if queue is not None and limit is None:
            raise _issue(f"{path}.limit", f"required with queue {queue!r}")
        if queue is None and limit is not None:
            raise _issue(f"{path}.queue", f"required with a limit; one of {', '.join(QUEUES)}")
        red = None
        if queue == "red":
            spec = data.get("red", {})
            _check_keys(spec, ("min", "max", "probability", "avpkt", "ecn"), f"{path}.red")
            assert limit is not None
            lo = _quantity(parse_size, spec.get("min", limit // 8), f"{path}.red.min")
            hi = _quantity(parse_size, spec.get("max", limit // 3), f"{path}.red.max")
            if not 0 < lo < hi <= limit:
                raise _issue(f"{path}.red", f"need 0 < min < max <= limit (got min={lo}, max={hi}, limit={limit})")
            probability = float(spec.get("probability", 0.1))
            if not 0.0 < probability <= 1.0:
                raise _issue(f"{path}.red.probability", f"must be in (0, 1] (got {probability})")
            red = RedParams(lo, hi, probability, int(spec.get("avpkt", 1000)), bool(spec.get("ecn", False)))
        elif "red" in data:
            raise _issue(f"{path}.red", "only with queue 'red'")
        burst = _quantity(parse_size, data["burst"], f"{path}.burst") if "burst" in data else None
        if rate is None and ("shaper" in data or burst is not None):
            raise _issue(f"{path}.rate", "required with a shaper or burst")
        if rate is None and queue is None:
            raise _issue(path, "give a rate, a queue, or both")
        return cls(rate, shaper, burst, queue, limit, red)


@dataclass(frozen=True)
class Link:
    """A veth pair between nodes ``a`` and ``b`` with one MTU; ``egress`` maps an end's node to its Egress."""

    a: str
    b: str
    mtu: int = 1500
    egress: Mapping[str, Egress] = field(default_factory=dict)


@dataclass(frozen=True)
class Tunnel:
    """A VXLAN tunnel between hosts ``a`` and ``b`` over their direct link (VNI ``vni``, inner MTU ``mtu``)."""

    a: str
    b: str
    vni: int
    mtu: int


@dataclass(frozen=True)
class Topology:
    """Hosts, routers (forwarding namespaces), links, tunnels and conntrack firewalls.

    ``conntrack`` lists namespaces that get a stateful nftables firewall
    (:data:`CONNTRACK_RULES`); ``sysctls`` are set in every namespace
    (``net.ipv4.tcp_...`` are per namespace in Linux). A namespace's default
    congestion control (``net.ipv4.tcp_congestion_control``) may only be one
    the init namespace allows (``tcp_allowed_congestion_control``); the lab
    allows it there while it sets the namespaces' sysctls and restores the
    list right after (:func:`congestion_control_allowed`).

    ``steering`` says on which CPU a device's received packets are processed.
    ``flow`` (default) spreads flows over all CPUs by their hash (RPS,
    ``rps_cpus`` = every CPU), so each flow is handled by one CPU at a time and
    its packets stay in order, as with a NIC's receive-side scaling.
    ``none`` keeps the veth default: a packet is processed on the CPU that sent
    it, so a flow whose sender moves between CPUs can be reordered (Linux
    then detects reordering and undoes congestion-window reductions).
    """

    hosts: tuple[str, ...]
    routers: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    tunnels: tuple[Tunnel, ...] = ()
    conntrack: tuple[str, ...] = ()
    sysctls: Mapping[str, str] = field(default_factory=dict)
    steering: str = "flow"

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.hosts + self.routers

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Topology":
        """Build and check a topology; errors name the field (``links[2].egress.r.limit: ...``)."""
        _check_keys(data, ("hosts", "routers", "links", "tunnels", "conntrack", "sysctls", "steering"), "")
        steering = data.get("steering", "flow")
        if steering not in STEERING:
            raise _issue("steering", unknown_value(steering, STEERING))
        hosts = tuple(data.get("hosts", ()))
        routers = tuple(data.get("routers", ()))
        if not hosts:
            raise _issue("hosts", "at least one host is required")
        seen: set[str] = set()
        for section, names in (("hosts", hosts), ("routers", routers)):
            for index, name in enumerate(names):
                if not isinstance(name, str) or not _NODE_NAME.match(name):
                    raise _issue(f"{section}[{index}]", f"node names are [a-z][a-z0-9_]*, at most 16 (got {name!r})")
                if name in seen:
                    raise _issue(f"{section}[{index}]", f"duplicate node {name!r}")
                seen.add(name)
        links = []
        pairs: set[frozenset[str]] = set()
        for index, spec in enumerate(data.get("links", ())):
            path = f"links[{index}]"
            _check_keys(spec, ("a", "b", "mtu", "egress"), path)
            for end in ("a", "b"):
                if spec.get(end) not in seen:
                    raise _issue(f"{path}.{end}", unknown_value(spec.get(end), sorted(seen)))
            if spec["a"] == spec["b"]:
                raise _issue(path, "a link joins two different nodes")
            pair = frozenset((spec["a"], spec["b"]))
            if pair in pairs:
                raise _issue(path, f"a second link between {spec['a']} and {spec['b']}")
            pairs.add(pair)
            mtu = _quantity(parse_size, spec.get("mtu", 1500), f"{path}.mtu")
            if not 68 <= mtu <= 65535:
                raise _issue(f"{path}.mtu", f"must be in 68..65535 B (got {mtu})")
            egress_spec = spec.get("egress", {})
            _check_keys(egress_spec, (spec["a"], spec["b"]), f"{path}.egress")
            egress = {
                node: Egress.from_dict(value, f"{path}.egress.{node}") for node, value in egress_spec.items()
            }
            links.append(Link(spec["a"], spec["b"], mtu, egress))
        if len(links) > 256:
            raise _issue("links", f"at most 256 links (one /24 each in {LINK_NET}); got {len(links)}")
        tunnels = []
        for index, spec in enumerate(data.get("tunnels", ())):
            path = f"tunnels[{index}]"
            _check_keys(spec, ("a", "b", "vni", "mtu"), path)
            pair = frozenset((spec.get("a"), spec.get("b")))
            underlay = next((link for link in links if frozenset((link.a, link.b)) == pair), None)
            if underlay is None:
                raise _issue(path, f"no link between {spec.get('a')!r} and {spec.get('b')!r} to carry the tunnel")
            vni = spec.get("vni", 100 + index)
            if not isinstance(vni, int) or not 0 < vni < 2**24:
                raise _issue(f"{path}.vni", f"a VXLAN network identifier is 1..16777215 (got {vni!r})")
            mtu = _quantity(parse_size, spec.get("mtu", underlay.mtu - VXLAN_OVERHEAD), f"{path}.mtu")
            if not 68 <= mtu <= underlay.mtu - VXLAN_OVERHEAD:
                raise _issue(
                    f"{path}.mtu",
                    f"must be in 68..{underlay.mtu - VXLAN_OVERHEAD} B (the underlay MTU {underlay.mtu} "
                    f"less {VXLAN_OVERHEAD} B of VXLAN encapsulation; got {mtu})",
                )
            tunnels.append(Tunnel(spec["a"], spec["b"], vni, mtu))
        if len(tunnels) > 256:
            raise _issue("tunnels", f"at most 256 tunnels (one /24 each in {TUNNEL_NET}); got {len(tunnels)}")
        conntrack = tuple(data.get("conntrack", ()))
        for index, name in enumerate(conntrack):
            if name not in seen:
                raise _issue(f"conntrack[{index}]", unknown_value(name, sorted(seen)))
        sysctls = {str(k): str(v) for k, v in dict(data.get("sysctls", {})).items()}
        topology = cls(hosts, routers, tuple(links), tuple(tunnels), conntrack, sysctls, steering)
        topology._check_connected()
        return topology

    def _check_connected(self) -> None:
        reached = {self.hosts[0]}
        frontier = [self.hosts[0]]
        while frontier:
            node = frontier.pop()
            for peer in self.neighbours(node):
                if peer not in reached:
                    reached.add(peer)
                    frontier.append(peer)
        missing = [node for node in self.nodes if node not in reached]
        if missing:
            raise _issue("links", f"not connected: {', '.join(missing)} cannot be reached from {self.hosts[0]}")

    def neighbours(self, node: str) -> list[str]:
        return [link.b if link.a == node else link.a for link in self.links if node in (link.a, link.b)]

    def link_between(self, a: str, b: str) -> tuple[int, Link]:
        for index, link in enumerate(self.links):
            if {link.a, link.b} == {a, b}:
                return index, link
        raise LabError(f"no link between {a} and {b}")


def link_addresses(index: int) -> tuple[str, str, str]:
    """(subnet, address of end a, address of end b) of link ``index``."""
    subnet = ipaddress.ip_network((int(LINK_NET.network_address) + 256 * index, 24))
    return str(subnet), str(subnet.network_address + 1), str(subnet.network_address + 2)


def tunnel_addresses(index: int) -> tuple[str, str, str]:
    """(subnet, address of end a, address of end b) of tunnel ``index``."""
    subnet = ipaddress.ip_network((int(TUNNEL_NET.network_address) + 256 * index, 24))
    return str(subnet), str(subnet.network_address + 1), str(subnet.network_address + 2)


#: The stateful firewall of a ``conntrack`` namespace (nft(8) syntax). The
#: VXLAN underlay (UDP 4789) is exempt (``notrack`` at raw priority), so the
#: connection tracker sees the inner flows only, as a host datapath that
#: tracks the tenant's connections does. Each tracked packet takes one
#: conntrack lookup per namespace it enters or leaves.
CONNTRACK_RULES = """
table inet fslab {
    chain raw_prerouting {
        type filter hook prerouting priority raw; policy accept;
        udp dport %(port)d notrack
    }
    chain raw_output {
        type filter hook output priority raw; policy accept;
        udp dport %(port)d notrack
    }
    chain input {
        type filter hook input priority filter; policy drop;
        ct state established,related accept
        ct state new accept
        ct state untracked accept
        ct state invalid counter name invalid_in drop
    }
    chain forward {
        type filter hook forward priority filter; policy drop;
        ct state established,related accept
        ct state new accept
        ct state untracked accept
        ct state invalid counter name invalid_fwd drop
    }
    chain output {
        type filter hook output priority filter; policy accept;
        ct state established,related accept
        ct state new accept
        ct state untracked accept
    }
    counter invalid_in { }
    counter invalid_fwd { }
}
""" % {
    "port": VXLAN_PORT
}


# --------------------------------------------------------------------------- records and parsers


@dataclass(frozen=True)
class QdiscStats:
    """One qdisc's counters (``tc -s -j qdisc``): bytes and packets sent, drops, current backlog."""

    node: str
    dev: str
    kind: str
    handle: str
    parent: str
    bytes: int
    packets: int
    drops: int
    overlimits: int
    requeues: int
    backlog_bytes: int
    qlen: int

    def minus(self, before: "QdiscStats") -> "QdiscStats":
        """Counters accumulated since ``before`` (backlog and qlen stay as they are now)."""
        return QdiscStats(
            self.node,
            self.dev,
            self.kind,
            self.handle,
            self.parent,
            self.bytes - before.bytes,
            self.packets - before.packets,
            self.drops - before.drops,
            self.overlimits - before.overlimits,
            self.requeues - before.requeues,
            self.backlog_bytes,
            self.qlen,
        )


def parse_tc_qdiscs(text: str, node: str = "", dev: str = "") -> list[QdiscStats]:
    """Parse ``tc -s -j qdisc show [dev DEV]`` output."""
    records = []
    for item in json.loads(text or "[]"):
        records.append(
            QdiscStats(
                node=node,
                dev=item.get("dev", dev),
                kind=item["kind"],
                handle=item.get("handle", ""),
                parent=item.get("parent", "root" if item.get("root") else ""),
                bytes=int(item.get("bytes", 0)),
                packets=int(item.get("packets", 0)),
                drops=int(item.get("drops", 0)),
                overlimits=int(item.get("overlimits", 0)),
                requeues=int(item.get("requeues", 0)),
                backlog_bytes=int(item.get("backlog", 0)),
                qlen=int(item.get("qlen", 0)),
            )
        )
    return records


@dataclass(frozen=True)
class LinkCounters:
    """Interface counters (``ip -s -j link``)."""

    dev: str
    mtu: int
    rx_bytes: int
    rx_packets: int
    rx_dropped: int
    tx_bytes: int
    tx_packets: int
    tx_dropped: int

    def minus(self, before: "LinkCounters") -> "LinkCounters":
        return LinkCounters(
            self.dev,
            self.mtu,
            self.rx_bytes - before.rx_bytes,
            self.rx_packets - before.rx_packets,
            self.rx_dropped - before.rx_dropped,
            self.tx_bytes - before.tx_bytes,
            self.tx_packets - before.tx_packets,
            self.tx_dropped - before.tx_dropped,
        )


def parse_ip_link(text: str) -> dict[str, LinkCounters]:
    """Parse ``ip -s -j link show``: interface name -> counters."""
    out = {}
    for item in json.loads(text or "[]"):
        stats = item.get("stats64") or item.get("stats") or {}
        rx, tx = stats.get("rx", {}), stats.get("tx", {})
        out[item["ifname"]] = LinkCounters(
            item["ifname"],
            int(item.get("mtu", 0)),
            int(rx.get("bytes", 0)),
            int(rx.get("packets", 0)),
            int(rx.get("dropped", 0)),
            int(tx.get("bytes", 0)),
            int(tx.get("packets", 0)),
            int(tx.get("dropped", 0)),
        )
    return out


def parse_nstat(text: str) -> dict[str, int]:
    """Parse ``nstat -a -s -z -j`` (absolute SNMP and TcpExt counters of a namespace)."""
    data = json.loads(text)
    return {name: int(value) for name, value in data.get("kernel", data).items()}


@dataclass(frozen=True)
class FlowRecord:
    """One TCP stream (or UDP flow) of an iperf3 run.

    ``goodput_bps`` is what the receiver got over the receiver's measuring
    time; ``completion_s`` (sized jobs) is the time from the start of the
    whole run to the receiver's end of this stream.
    """

    job: int
    stream: int
    src: str
    dst: str
    protocol: str
    cc: str
    bytes_sent: int
    bytes_received: int
    seconds: float
    goodput_bps: float
    retransmits: int
    max_cwnd_bytes: int
    min_rtt_us: int
    mean_rtt_us: int
    max_rtt_us: int
    completion_s: Optional[float] = None
    lost_packets: Optional[int] = None
    packets: Optional[int] = None
    jitter_ms: Optional[float] = None
    intervals: tuple[tuple[float, float, int, int], ...] = ()
    """Per interval: (start s, end s, bytes sent, retransmits) as the sender saw them."""


@dataclass(frozen=True)
class Iperf3Summary:
    """What one iperf3 client reports: its streams, its cc, and sender/receiver CPU (percent of one CPU)."""

    protocol: str
    cc: str
    streams: list[dict[str, Any]]
    sender_cpu_percent: float
    receiver_cpu_percent: float
    seconds: float


def parse_iperf3(text: str) -> Iperf3Summary:
    """Parse ``iperf3 -c ... -J`` output (TCP or UDP); raise LabError on an iperf3 error."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LabError(f"iperf3 printed no JSON ({exc}): {text[:200]!r}") from None
    if data.get("error"):
        raise LabError(f"iperf3: {data['error']}")
    start, end = data.get("start", {}), data.get("end", {})
    protocol = start.get("test_start", {}).get("protocol", "TCP")
    cc = end.get("sender_tcp_congestion", "") if protocol == "TCP" else ""
    streams = []
    for index, item in enumerate(end.get("streams", [])):
        if protocol == "UDP":
            udp = item["udp"]
            streams.append(
                {
                    "bytes_sent": int(udp["bytes"]),
                    "bytes_received": int(udp["bytes"]) - int(udp.get("lost_packets", 0)) * _udp_len(start),
                    "seconds": float(udp["seconds"]),
                    "retransmits": 0,
                    "lost_packets": int(udp.get("lost_packets", 0)),
                    "packets": int(udp.get("packets", 0)),
                    "jitter_ms": float(udp.get("jitter_ms", 0.0)),
                }
            )
            continue
        sender, receiver = item["sender"], item["receiver"]
        streams.append(
            {
                "bytes_sent": int(sender["bytes"]),
                "bytes_received": int(receiver["bytes"]),
                "seconds": float(receiver["seconds"]),
                "retransmits": int(sender.get("retransmits", 0)),
                "max_cwnd_bytes": int(sender.get("max_snd_cwnd", 0)),
                "min_rtt_us": int(sender.get("min_rtt", 0)),
                "mean_rtt_us": int(sender.get("mean_rtt", 0)),
                "max_rtt_us": int(sender.get("max_rtt", 0)),
            }
        )
    for interval in data.get("intervals", []):
        for index, item in enumerate(interval.get("streams", [])):
            if index < len(streams):
                streams[index].setdefault("intervals", []).append(
                    (
                        float(item["start"]),
                        float(item["end"]),
                        int(item["bytes"]),
                        int(item.get("retransmits", 0)),
                    )
                )
    cpu = end.get("cpu_utilization_percent", {})
    seconds = float(end.get("sum_received", end.get("sum", {})).get("seconds", 0.0))
    return Iperf3Summary(
        protocol,
        cc,
        streams,
        float(cpu.get("host_total", 0.0)),
        float(cpu.get("remote_total", 0.0)),
        seconds,
    )


def _udp_len(start: Mapping[str, Any]) -> int:
    return int(start.get("test_start", {}).get("blksize", 0))


@dataclass(frozen=True)
class LatencyRecord:
    """sockperf ping-pong: one-way latency (half the round trip) in microseconds."""

    message_bytes: int
    protocol: str
    observations: int
    avg_us: float
    std_us: float
    min_us: float
    max_us: float
    percentiles_us: Mapping[str, float]
    dropped: int


_SOCKPERF_PCT = re.compile(r"percentile\s+([\d.]+)\s*=\s*([\d.]+)")
_SOCKPERF_AVG = re.compile(r"avg-latency=([\d.]+)\s*\(std-dev=([\d.]+)\)")
_SOCKPERF_OBS = re.compile(r"Total\s+(\d+)\s+observations")
_SOCKPERF_MAX = re.compile(r"<MAX> observation\s*=\s*([\d.]+)")
_SOCKPERF_MIN = re.compile(r"<MIN> observation\s*=\s*([\d.]+)")
_SOCKPERF_DROP = re.compile(r"# dropped messages = (\d+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_sockperf(text: str, message_bytes: int = 0, protocol: str = "udp") -> LatencyRecord:
    """Parse the summary that ``sockperf ping-pong`` prints (latency in usec, half round trip)."""
    text = _ANSI.sub("", text)
    avg = _SOCKPERF_AVG.search(text)
    obs = _SOCKPERF_OBS.search(text)
    if not avg or not obs:
        raise LabError(f"sockperf printed no latency summary: {text[-300:]!r}")
    percentiles = {f"p{float(p):g}": float(v) for p, v in _SOCKPERF_PCT.findall(text)}
    drop = _SOCKPERF_DROP.search(text)
    high, low = _SOCKPERF_MAX.search(text), _SOCKPERF_MIN.search(text)
    return LatencyRecord(
        message_bytes,
        protocol,
        int(obs.group(1)),
        float(avg.group(1)),
        float(avg.group(2)),
        float(low.group(1)) if low else float("nan"),
        float(high.group(1)) if high else float("nan"),
        percentiles,
        int(drop.group(1)) if drop else 0,
    )


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


def environment(lab: Optional["Lab"] = None, node: Optional[str] = None) -> dict[str, Any]:
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


# --------------------------------------------------------------------------- commands


def _cmd(argv: Sequence[str], check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise LabError(f"{' '.join(argv)} failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
    return done


def _red_args(egress: Egress, mtu: int) -> str:
    red = egress.red or RedParams(max(1, (egress.limit or 0) // 8), max(2, (egress.limit or 0) // 3))
    burst = max(1, (2 * red.min_bytes + red.max_bytes) // (3 * red.avpkt))
    bandwidth = f" bandwidth {egress.rate_bps}bit" if egress.rate_bps else ""
    ecn = " ecn" if red.ecn else ""
    return (
        f"limit {egress.limit} min {red.min_bytes} max {red.max_bytes} avpkt {red.avpkt} "
        f"burst {burst} probability {red.probability}{bandwidth}{ecn}"
    )


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


# --------------------------------------------------------------------------- jobs and runs


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


class Lab:
    """A topology built in network namespaces; use as a context manager (deleted on exit, errors included).

    ``Lab(topology).build()`` / ``.close()`` can also be called directly.
    ``nice`` runs the traffic processes (:meth:`spawn`) at that scheduling
    niceness; a negative one (a higher priority) lets a measurement hold its
    own against other users of a shared machine.
    """

    def __init__(self, topology: Topology, prefix: Optional[str] = None, nice: int = 0) -> None:
        self.topology = topology
        self.nice = nice
        self.prefix = prefix or f"{PREFIX}-{os.getpid()}-{secrets.token_hex(2)}"
        self._created: list[str] = []
        self._processes: list[subprocess.Popen[str]] = []
        self._devices: dict[tuple[str, str], str] = {}
        self._addresses: dict[str, str] = {}
        self._tunnel_addresses: dict[str, str] = {}
        self._previous_sigterm: Any = None

    # ---- naming

    def ns(self, node: str) -> str:
        """Namespace of ``node``."""
        if node not in self.topology.nodes:
            raise LabError(f"unknown node {node!r}; nodes: {', '.join(self.topology.nodes)}")
        return f"{self.prefix}-{node}"

    def device(self, node: str, peer: str) -> str:
        """Name, inside ``node``'s namespace, of the veth towards ``peer``."""
        try:
            return self._devices[(node, peer)]
        except KeyError:
            raise LabError(f"no link from {node} to {peer}") from None

    def device_table(self) -> dict[str, dict[str, str]]:
        """node -> {peer: device} for every link end (and ``tunnelN`` -> its VXLAN device)."""
        table: dict[str, dict[str, str]] = {}
        for (node, peer), dev in sorted(self._devices.items()):
            table.setdefault(node, {})[peer] = dev
        return table

    def address(self, node: str, tunnel: bool = False) -> str:
        """``node``'s address: on its first link, or on its first tunnel."""
        table = self._tunnel_addresses if tunnel else self._addresses
        if node not in table:
            raise LabError(f"{node} has no {'tunnel' if tunnel else 'link'} address")
        return table[node]

    # ---- lifecycle

    def __enter__(self) -> "Lab":
        self.build()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def required_tools(self) -> tuple[str, ...]:
        """The tools that building this topology runs: iproute2 and sysctl always,
        ethtool (every veth gets its offloads set), ``tc`` where a link has an
        egress queue or shaper, ``nft`` where a namespace tracks connections.
        Traffic tools (iperf3, sockperf, ss, nstat) are checked when they run."""
        tools = ("ip", "sysctl", "ethtool")
        if any(link.egress for link in self.topology.links):
            tools += ("tc",)
        if self.topology.conntrack:
            tools += ("nft",)
        return tools

    def build(self) -> "Lab":
        _require(self.required_tools())
        sweep_stale()
        self._trap_sigterm()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def _trap_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def interrupted(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt(f"signal {signum}")

        self._previous_sigterm = signal.signal(signal.SIGTERM, interrupted)

    def close(self) -> None:
        """End every process started here and delete every namespace (safe to call twice)."""
        for process in self._processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
        self._processes.clear()
        for ns in reversed(self._created):
            _delete_namespace(ns)
        self._created.clear()
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    def exists(self) -> bool:
        """Whether any of this lab's namespaces still exists."""
        return any(ns.startswith(self.prefix + "-") for ns in _namespaces())

    def _build(self) -> None:
        topo = self.topology
        for node in topo.nodes:
            ns = f"{self.prefix}-{node}"
            _cmd(["ip", "netns", "add", ns])
            self._created.append(ns)
            self.sysctl(node, "net.ipv6.conf.all.disable_ipv6", "1")
            self.sysctl(node, "net.ipv6.conf.default.disable_ipv6", "1")
            self.sysctl(node, "net.ipv4.ip_forward", "1" if node in topo.routers else "0")
            self.sysctl(node, "net.ipv4.tcp_no_metrics_save", "1")
            with congestion_control_allowed(topo.sysctls.get(CC_SYSCTL)):
                for key, value in topo.sysctls.items():
                    self.sysctl(node, key, value)
            self.run(node, ["ip", "link", "set", "lo", "up"])
        counters: dict[str, int] = {}
        for index, link in enumerate(topo.links):
            names = []
            for node in (link.a, link.b):
                names.append(f"eth{counters.get(node, 0)}")
                counters[node] = counters.get(node, 0) + 1
            self._devices[(link.a, link.b)], self._devices[(link.b, link.a)] = names
            _cmd(
                [
                    "ip", "link", "add", names[0], "netns", self.ns(link.a), "mtu", str(link.mtu),
                    "type", "veth", "peer", "name", names[1], "netns", self.ns(link.b), "mtu", str(link.mtu),
                ]
            )  # fmt: skip
            subnet, addr_a, addr_b = link_addresses(index)
            for node, dev, addr in ((link.a, names[0], addr_a), (link.b, names[1], addr_b)):
                self.run(node, ["ip", "addr", "add", f"{addr}/24", "dev", dev])
                self._offloads_off(node, dev)
                self.run(node, ["ip", "link", "set", dev, "up"])
                self._addresses.setdefault(node, addr)
        for index, link in enumerate(topo.links):
            for node, egress in link.egress.items():
                peer = link.b if node == link.a else link.a
                self._configure_egress(node, self.device(node, peer), egress, link.mtu, f"links[{index}].egress.{node}")
        self._routes()
        for index, tunnel in enumerate(topo.tunnels):
            self._tunnel(index, tunnel)
        for node in topo.conntrack:
            self.run(node, ["nft", "-f", "-"], input_text=CONNTRACK_RULES)

    def _offloads_off(self, node: str, dev: str) -> None:
        self.run(node, ["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"])
        if self.topology.steering == "flow":
            mask = format((1 << (os.cpu_count() or 1)) - 1, "x")
            # `ip netns exec` mounts the namespace's own /sys/class/net.
            self.run(node, ["sh", "-c", f"echo {mask} > /sys/class/net/{dev}/queues/rx-0/rps_cpus"])

    def _configure_egress(self, node: str, dev: str, egress: Egress, mtu: int, path: str) -> None:
        if egress.queue is not None and not qdisc_available(egress.queue):
            raise _issue(f"{path}.queue", f"this kernel has no '{egress.queue}' qdisc")
        tc = ["tc", "qdisc", "replace", "dev", dev]
        frame = mtu + ETH_HEADER
        parent = ["root"]
        if egress.rate_bps is not None:
            burst = egress.burst_bytes or max(10 * frame, egress.rate_bps // 8 // 10_000)
            if egress.shaper == "htb":
                self.run(node, tc + ["root", "handle", "1:", "htb", "default", "1"])
                self.run(
                    node,
                    ["tc", "class", "replace", "dev", dev, "parent", "1:", "classid", "1:1", "htb"]
                    + ["rate", f"{egress.rate_bps}bit", "ceil", f"{egress.rate_bps}bit"]
                    + ["burst", str(burst), "cburst", str(burst), "quantum", str(max(frame, 1514))],
                )
            else:
                # tbf's own queue limit only matters without a child qdisc; the child holds the packets.
                self.run(
                    node,
                    tc
                    + ["root", "handle", "1:", "tbf", "rate", f"{egress.rate_bps}bit", "burst", str(burst)]
                    + ["limit", str(max(egress.limit or 0, 10 * frame) if egress.queue != "pfifo" else 1_000_000)]
                    + ["mtu", str(max(frame, 2048))],
                )
            parent = ["parent", "1:1"]
        if egress.queue is not None:
            if egress.queue == "red":
                args = _red_args(egress, mtu).split()
            else:
                args = ["limit", str(egress.limit)]
            self.run(node, tc + parent + ["handle", "10:", egress.queue] + args)

    def _routes(self) -> None:
        topo = self.topology
        for node in topo.nodes:
            # Breadth-first search from node: the first hop towards every other node.
            first_hop: dict[str, str] = {}
            queue = deque()
            for peer in topo.neighbours(node):
                first_hop[peer] = peer
                queue.append(peer)
            while queue:
                current = queue.popleft()
                for peer in topo.neighbours(current):
                    if peer != node and peer not in first_hop:
                        first_hop[peer] = first_hop[current]
                        queue.append(peer)
            for index, link in enumerate(topo.links):
                if node in (link.a, link.b):
                    continue
                subnet = link_addresses(index)[0]
                hop_a, hop_b = first_hop[link.a], first_hop[link.b]
                # The nearer end decides; ties go to end a.
                hop = hop_a if self._distance(node, link.a) <= self._distance(node, link.b) else hop_b
                self.run(node, ["ip", "route", "add", subnet, "via", self._peer_address(node, hop)])

    def _distance(self, src: str, dst: str) -> int:
        seen = {src: 0}
        queue = deque([src])
        while queue:
            current = queue.popleft()
            if current == dst:
                return seen[current]
            for peer in self.topology.neighbours(current):
                if peer not in seen:
                    seen[peer] = seen[current] + 1
                    queue.append(peer)
        return 1 << 30

    def _peer_address(self, node: str, peer: str) -> str:
        index, link = self.topology.link_between(node, peer)
        _, addr_a, addr_b = link_addresses(index)
        return addr_b if link.a == node else addr_a

    def _tunnel(self, index: int, tunnel: Tunnel) -> None:
        link_index, link = self.topology.link_between(tunnel.a, tunnel.b)
        _, under_a, under_b = link_addresses(link_index)
        subnet, inner_a, inner_b = tunnel_addresses(index)
        dev = f"vx{index}"
        for node, local, remote, inner in (
            (tunnel.a, under_a if link.a == tunnel.a else under_b, under_b if link.a == tunnel.a else under_a, inner_a),
            (tunnel.b, under_b if link.a == tunnel.a else under_a, under_a if link.a == tunnel.a else under_b, inner_b),
        ):
            underlay = self.device(node, tunnel.b if node == tunnel.a else tunnel.a)
            self.run(
                node,
                ["ip", "link", "add", dev, "type", "vxlan", "id", str(tunnel.vni), "local", local, "remote", remote]
                + ["dstport", str(VXLAN_PORT), "dev", underlay, "nolearning"],
            )
            self.run(node, ["ip", "link", "set", dev, "mtu", str(tunnel.mtu)])
            self.run(node, ["ip", "addr", "add", f"{inner}/24", "dev", dev])
            self._offloads_off(node, dev)
            self.run(node, ["ip", "link", "set", dev, "up"])
            self._tunnel_addresses.setdefault(node, inner)
            self._devices[(node, f"tunnel{index}")] = dev

    # ---- running things

    def run(
        self, node: str, argv: Sequence[str], check: bool = True, timeout: float = 60.0, input_text: Optional[str] = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a command in ``node``'s namespace and wait for it."""
        full = ["ip", "netns", "exec", self.ns(node), *argv]
        done = subprocess.run(full, capture_output=True, text=True, timeout=timeout, input=input_text)
        if check and done.returncode != 0:
            raise LabError(f"[{node}] {' '.join(argv)} failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
        return done

    def spawn(self, node: str, argv: Sequence[str], stdout: Any = subprocess.PIPE) -> subprocess.Popen[str]:
        """Start a command in ``node``'s namespace; it is ended by :meth:`close` if still running."""
        niced = ["nice", "-n", str(self.nice), *argv] if self.nice else list(argv)
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.ns(node), *niced],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self._processes.append(process)
        return process

    def sysctl(self, node: str, key: str, value: str) -> None:
        self.run(node, ["sysctl", "-q", "-w", f"{key}={value}"])

    def qdiscs(self, node: str, dev: Optional[str] = None) -> list[QdiscStats]:
        """Counters of every qdisc in ``node`` (or on one device)."""
        argv = ["tc", "-s", "-j", "qdisc", "show"] + (["dev", dev] if dev else [])
        return parse_tc_qdiscs(self.run(node, argv).stdout, node=node, dev=dev or "")

    def link_counters(self, node: str) -> dict[str, LinkCounters]:
        return parse_ip_link(self.run(node, ["ip", "-s", "-j", "link", "show"]).stdout)

    def nstat(self, node: str) -> dict[str, int]:
        """Absolute SNMP/TcpExt counters of ``node``'s namespace (nstat -a -s -z)."""
        return parse_nstat(self.run(node, ["nstat", "-a", "-s", "-z", "-j"]).stdout)

    def ss(self, node: str) -> str:
        """``ss -tin`` of ``node``: TCP sockets with their internal state (cwnd, rtt, retrans, ...)."""
        return self.run(node, ["ss", "-tin"]).stdout

    def _configured_egresses(self) -> list[tuple[str, str]]:
        out = []
        for link in self.topology.links:
            for node in link.egress:
                peer = link.b if node == link.a else link.a
                out.append((node, self.device(node, peer)))
        return out

    def _wait_listening(self, node: str, port: int, timeout_s: float = 5.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if f":{port} " in self.run(node, ["ss", "-Hltn"]).stdout:
                return
            time.sleep(0.02)
        raise LabError(f"iperf3 server on {node} port {port} did not start listening")

    def _snapshot(self, nodes: Sequence[str]) -> dict[str, Any]:
        egresses = self._configured_egresses()
        return {
            "egresses": egresses,
            "nodes": list(nodes),
            "qdiscs": [q for node, dev in egresses for q in self.qdiscs(node, dev)],
            "links": {node: self.link_counters(node) for node in self.topology.nodes},
            "nstat": {node: self.nstat(node) for node in nodes},
            "load": load_average(),
            "softnet": softnet_drops(),
            "cpu": cpu_snapshot(),
        }

    def _collect(
        self,
        before: dict[str, Any],
        jobs: Sequence[Any],
        flows: list[FlowRecord],
        app_cpu_s: float,
        wall_s: float,
        samples: list[tuple[float, str, str, int, int]],
    ) -> TrafficRun:
        cpu = cpu_snapshot().minus(before["cpu"])
        q_after = [q for node, dev in before["egresses"] for q in self.qdiscs(node, dev)]
        links = {}
        for node in self.topology.nodes:
            after = self.link_counters(node)
            old = before["links"][node]
            links[node] = {dev: after[dev].minus(old[dev]) for dev in after if dev in old}
        nstat = {}
        for node in before["nodes"]:
            after_n, old_n = self.nstat(node), before["nstat"][node]
            nstat[node] = {k: v - old_n.get(k, 0) for k, v in after_n.items() if v - old_n.get(k, 0)}
        return TrafficRun(
            jobs=list(jobs),
            flows=flows,
            qdiscs=[after.minus(old) for after, old in zip(q_after, before["qdiscs"])],
            links=links,
            nstat=nstat,
            cpu=cpu,
            iperf3_cpu_s=app_cpu_s,
            wall_s=wall_s,
            load_before=before["load"],
            load_after=load_average(),
            softnet_drops=softnet_drops() - before["softnet"],
            qdisc_samples=samples,
            devices=self.device_table(),
        )

    @contextlib.contextmanager
    def _sampling(self, interval_s: Optional[float], t0: float) -> Iterator[list[tuple[float, str, str, int, int]]]:
        samples: list[tuple[float, str, str, int, int]] = []
        stop = threading.Event()
        sampler = None
        if interval_s:
            args = (self._configured_egresses(), interval_s, t0, samples, stop)
            sampler = threading.Thread(target=self._sample, args=args)
            sampler.start()
        try:
            yield samples
        finally:
            stop.set()
            if sampler is not None:
                sampler.join()

    def _check_ends(self, index: int, src: str, dst: str, cc: Optional[str]) -> None:
        for end in (src, dst):
            if end not in self.topology.hosts:
                raise LabError(f"jobs[{index}]: {end!r} is not a host; hosts: {', '.join(self.topology.hosts)}")
        if cc and cc not in CONGESTION_CONTROLS:
            raise LabError(f"jobs[{index}].cc: {unknown_value(cc, CONGESTION_CONTROLS)}")

    def iperf3(
        self,
        jobs: Sequence[Iperf3Job],
        timeout_s: Optional[float] = None,
        sample_interval_s: Optional[float] = None,
        nstat_nodes: Optional[Sequence[str]] = None,
        trace_scheduler: bool = True,
    ) -> TrafficRun:
        """Run iperf3 jobs at the same time and collect goodput, retransmits, queue and CPU counters.

        ``trace_scheduler`` (where tracefs is available) records the
        distribution of every iperf3 process's scheduling waits
        (:mod:`fabricsim.validation.sched_trace`) into its reader or writer stats.

        ``sample_interval_s`` polls the backlog of every configured queue
        during the run (each poll runs ``tc``, which costs CPU: keep it
        coarse). Sized jobs (``bytes``) end when the client has written its
        bytes, so their receiver counts and times stop short of delivery: use
        :meth:`transfers` for job completion times.
        """
        if not jobs:
            raise LabError("iperf3: no jobs")
        _require(("iperf3", "ss", "nstat"))
        servers = []
        for index, job in enumerate(jobs):
            self._check_ends(index, job.src, job.dst, job.cc if job.udp_rate_bps is None else None)
            server = job.pinned(["iperf3", "-s", "-1", "-p", str(_IPERF_BASE_PORT + index)])
            servers.append(self.spawn(job.dst, server, stdout=subprocess.DEVNULL))
        for index, job in enumerate(jobs):
            self._wait_listening(job.dst, _IPERF_BASE_PORT + index)
        nodes = list(nstat_nodes) if nstat_nodes is not None else sorted({j.src for j in jobs} | {j.dst for j in jobs})
        before = self._snapshot(nodes)
        clients: list[tuple[float, subprocess.Popen[str]]] = []
        t0 = time.monotonic()
        longest = max((j.duration_s or 0.0) + j.start_delay_s for j in jobs)
        limit = timeout_s or (longest + 60.0 if all(j.bytes is None for j in jobs) else 600.0)
        outputs = []
        watch_servers = _ProcessWatch([s.pid for s in servers])
        watch_clients = _ProcessWatch()
        watching = contextlib.closing(watch_servers), contextlib.closing(watch_clients)
        tracer = sched_trace.SchedTrace("iperf3") if trace_scheduler and sched_trace.available() is None else None
        tracing = tracer if tracer is not None else contextlib.nullcontext()
        with self._sampling(sample_interval_s, t0) as samples, watching[0], watching[1], tracing:
            for index, job in enumerate(jobs):
                if job.start_delay_s:
                    time.sleep(max(0.0, t0 + job.start_delay_s - time.monotonic()))
                argv = job.argv(self.address(job.dst, tunnel=job.tunnel), _IPERF_BASE_PORT + index)
                clients.append((time.monotonic() - t0, self.spawn(job.src, argv)))
                watch_clients.add(clients[-1][1].pid)
            for started, process in clients:
                try:
                    out, err = process.communicate(timeout=max(1.0, t0 + limit - time.monotonic()))
                except subprocess.TimeoutExpired:
                    raise LabError(f"iperf3 did not finish within {limit:.0f} s") from None
                if not out.strip():
                    raise LabError(f"iperf3 client failed ({process.returncode}): {err.strip()}")
                outputs.append((started, out))
        readers, writers = watch_servers.close(), watch_clients.close()
        waits = sched_trace.summaries(tracer, [r.pid for r in readers] + [w.pid for w in writers])
        for stats in (*readers, *writers):
            stats.sched = waits.get(stats.pid)
        wall = time.monotonic() - t0
        for server in servers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=5)
        flows: list[FlowRecord] = []
        app_cpu = 0.0
        for index, (job, (started, text)) in enumerate(zip(jobs, outputs)):
            summary = parse_iperf3(text)
            app_cpu += (summary.sender_cpu_percent + summary.receiver_cpu_percent) / 100.0 * summary.seconds
            for stream_index, stream in enumerate(summary.streams):
                seconds = stream["seconds"]
                flows.append(
                    FlowRecord(
                        job=index,
                        stream=stream_index,
                        src=job.src,
                        dst=job.dst,
                        protocol=summary.protocol.lower(),
                        cc=summary.cc,
                        bytes_sent=stream["bytes_sent"],
                        bytes_received=stream["bytes_received"],
                        seconds=seconds,
                        goodput_bps=8.0 * stream["bytes_received"] / seconds if seconds > 0 else 0.0,
                        retransmits=stream["retransmits"],
                        max_cwnd_bytes=stream.get("max_cwnd_bytes", 0),
                        min_rtt_us=stream.get("min_rtt_us", 0),
                        mean_rtt_us=stream.get("mean_rtt_us", 0),
                        max_rtt_us=stream.get("max_rtt_us", 0),
                        completion_s=None,
                        lost_packets=stream.get("lost_packets"),
                        packets=stream.get("packets"),
                        jitter_ms=stream.get("jitter_ms"),
                        intervals=tuple(tuple(i) for i in stream.get("intervals", [])),  # type: ignore[misc]
                    )
                )
        run = self._collect(before, jobs, flows, app_cpu, wall, samples)
        run.readers = readers
        run.writers = writers
        run.client_starts_s = [started for started, _ in clients]
        return run

    def transfers(
        self,
        jobs: Sequence[Transfer],
        timeout_s: float = 600.0,
        sample_interval_s: Optional[float] = None,
        nstat_nodes: Optional[Sequence[str]] = None,
    ) -> TrafficRun:
        """Sized TCP transfers with exact completion times (:mod:`fabricsim.validation.linux_transfer`).

        The senders connect at one common start time (plus their
        ``start_delay_s``); ``completion_s`` of a flow is the time from that
        start to the receiver's last byte; the run's ``job_completion_s`` is the
        largest. ``seconds`` and ``goodput_bps`` are per flow, from its own
        start to its last byte. Retransmissions, cwnd and RTT come from the
        sender's TCP_INFO after every byte was acknowledged.
        """
        if not jobs:
            raise LabError("transfers: no jobs")
        _require(("ss", "nstat"))
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linux_transfer.py")
        python = sys.executable or "python3"
        servers = []
        for index, job in enumerate(jobs):
            self._check_ends(index, job.src, job.dst, job.cc)
            port = _TRANSFER_BASE_PORT + index
            servers.append(self.spawn(job.dst, job.pinned([python, script, "server", str(port)])))
        for index, job in enumerate(jobs):
            self._wait_listening(job.dst, _TRANSFER_BASE_PORT + index)
        nodes = list(nstat_nodes) if nstat_nodes is not None else sorted({j.src for j in jobs} | {j.dst for j in jobs})
        before = self._snapshot(nodes)
        # Every client starts its interpreter, then waits for one common start time (one monotonic
        # clock for all namespaces), so that interpreter start-up does not skew the start times.
        t0 = time.monotonic() + _TRANSFER_LEAD_S
        clients = []
        with self._sampling(sample_interval_s, t0) as samples:
            for index, job in enumerate(jobs):
                address = self.address(job.dst, tunnel=job.tunnel)
                argv = [python, script, "client", address, str(_TRANSFER_BASE_PORT + index), str(job.bytes)]
                argv += [job.cc or "", repr(t0 + job.start_delay_s)]
                clients.append(self.spawn(job.src, job.pinned(argv)))
            results = []
            for process, server in zip(clients, servers):
                try:
                    out, err = process.communicate(timeout=max(1.0, t0 + timeout_s - time.monotonic()))
                    s_out, s_err = server.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    raise LabError(f"transfers did not finish within {timeout_s:.0f} s") from None
                if process.returncode or server.returncode:
                    raise LabError(f"transfer failed: {(err or s_err).strip()}")
                results.append((json.loads(out), json.loads(s_out)))
        wall = time.monotonic() - t0
        late = max(sent["start_s"] - sent["start_at_s"] for sent, _ in results)
        if late > 0.05:
            raise LabError(f"transfers: a sender started {late * 1e3:.0f} ms late (the machine is too busy)")
        origin = t0
        flows = []
        for index, (job, (sent, got)) in enumerate(zip(jobs, results)):
            seconds = got["last_byte_s"] - sent["start_s"]
            flows.append(
                FlowRecord(
                    job=index,
                    stream=0,
                    src=job.src,
                    dst=job.dst,
                    protocol="tcp",
                    cc=job.cc or "",
                    bytes_sent=sent["bytes"],
                    bytes_received=got["bytes"],
                    seconds=seconds,
                    goodput_bps=8.0 * got["bytes"] / seconds if seconds > 0 else 0.0,
                    retransmits=sent["total_retrans"],
                    max_cwnd_bytes=0,
                    min_rtt_us=0,
                    mean_rtt_us=sent["rtt_us"],
                    max_rtt_us=0,
                    completion_s=got["last_byte_s"] - origin,
                )
            )
        return self._collect(before, jobs, flows, 0.0, wall, samples)

    def _sample(
        self,
        egresses: list[tuple[str, str]],
        interval: float,
        t0: float,
        samples: list[tuple[float, str, str, int, int]],
        stop: threading.Event,
    ) -> None:
        while not stop.wait(interval):
            for node, dev in egresses:
                try:
                    stats = self.qdiscs(node, dev)
                except (LabError, subprocess.TimeoutExpired):
                    return
                leaf = [q for q in stats if q.parent != "root"] or stats
                if leaf:
                    samples.append((time.monotonic() - t0, node, dev, leaf[-1].backlog_bytes, leaf[-1].drops))

    def sockperf_pingpong(
        self,
        src: str,
        dst: str,
        message_bytes: int = 64,
        duration_s: float = 5.0,
        tcp: bool = False,
        tunnel: bool = False,
        port: int = 11111,
    ) -> LatencyRecord:
        """One-way latency (half round trip) from ``sockperf ping-pong`` between two hosts."""
        _require(("sockperf",))
        address = self.address(dst, tunnel=tunnel)
        proto = ["--tcp"] if tcp else []
        server = self.spawn(dst, ["sockperf", "server", "-i", address, "-p", str(port), *proto], subprocess.DEVNULL)
        try:
            if tcp:
                self._wait_listening(dst, port)
            else:
                time.sleep(0.3)
            done = self.run(
                src,
                ["sockperf", "ping-pong", "-i", address, "-p", str(port), "-t", f"{duration_s:g}"]
                + ["-m", str(message_bytes), *proto],
                timeout=duration_s + 30,
            )
        finally:
            server.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=5)
        return parse_sockperf(done.stdout + done.stderr, message_bytes, "tcp" if tcp else "udp")


@contextlib.contextmanager
def lab(topology: Topology | Mapping[str, Any]) -> Iterator[Lab]:
    """``with lab({...}) as l:`` builds a topology from a dict or a Topology and deletes it afterwards."""
    topo = topology if isinstance(topology, Topology) else Topology.from_dict(topology)
    with Lab(topo) as built:
        yield built


#: The result of :meth:`Lab.iperf3` (and :meth:`Lab.transfers`).
Iperf3Run = TrafficRun
