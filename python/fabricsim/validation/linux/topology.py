"""The lab's topologies: hosts, routers, links with their egress queues, VXLAN tunnels and
conntrack firewalls, as plain data checked field by field (:meth:`Topology.from_dict`), and
the addresses and ``tc`` arguments the lab derives from them."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from fabricsim.errors import FabricsimError, unknown_key, unknown_value
from fabricsim.units import parse_rate, parse_size

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


class LabError(FabricsimError):
    """The lab cannot be built or a command in it failed (bad topology, missing tool, not root)."""


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


def _red_args(egress: Egress, mtu: int) -> str:
    red = egress.red or RedParams(max(1, (egress.limit or 0) // 8), max(2, (egress.limit or 0) // 3))
    burst = max(1, (2 * red.min_bytes + red.max_bytes) // (3 * red.avpkt))
    bandwidth = f" bandwidth {egress.rate_bps}bit" if egress.rate_bps else ""
    ecn = " ecn" if red.ecn else ""
    return (
        f"limit {egress.limit} min {red.min_bytes} max {red.max_bytes} avpkt {red.avpkt} "
        f"burst {burst} probability {red.probability}{bandwidth}{ecn}"
    )
