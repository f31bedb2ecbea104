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

The package, by job: :mod:`~fabricsim.validation.linux.topology` (the
topology as data and its checks), :mod:`~fabricsim.validation.linux.parsers`
(records and the tools' output), :mod:`~fabricsim.validation.linux.probes`
(what the machine has, its environment and /proc counters),
:mod:`~fabricsim.validation.linux.namespaces` (creating, deleting and
sweeping namespaces), :mod:`~fabricsim.validation.linux.jobs` (the jobs and
their runs) and :mod:`~fabricsim.validation.linux.lab` (the :class:`Lab`).
Every name is importable from ``fabricsim.validation.linux`` itself.
"""

from __future__ import annotations

# ``os`` and ``shutil`` stay attributes of the package (``linux.os.geteuid``,
# ``linux.shutil.which``), as they were of the single module it replaces.
import os  # noqa: F401
import shutil  # noqa: F401

from fabricsim.validation.linux.jobs import Iperf3Job, Iperf3Run, TrafficRun, Transfer
from fabricsim.validation.linux.lab import Lab
from fabricsim.validation.linux.namespaces import sweep_stale
from fabricsim.validation.linux.parsers import (
    FlowRecord,
    Iperf3Summary,
    LatencyRecord,
    LinkCounters,
    QdiscStats,
    parse_iperf3,
    parse_ip_link,
    parse_nstat,
    parse_ss_memory,
    SocketMemory,
    parse_sockperf,
    parse_tc_qdiscs,
)
from fabricsim.validation.linux.probes import (
    ALLOWED_CC_PATH,
    CC_SYSCTL,
    CpuSnapshot,
    ReaderStats,
    congestion_control_allowed,
    cpu_snapshot,
    environment,
    kernel_config_hz,
    load_average,
    qdisc_available,
    reader_counters,
    reader_stats,
    softnet_drops,
    task_runtime_s,
    unavailable_reason,
)
from fabricsim.validation.linux.topology import (
    CONGESTION_CONTROLS,
    CONNTRACK_RULES,
    ETH_HEADER,
    LINK_NET,
    PREFIX,
    QUEUES,
    SHAPERS,
    STEERING,
    TOOLS,
    TUNNEL_NET,
    VXLAN_OVERHEAD,
    VXLAN_PORT,
    Egress,
    LabError,
    Link,
    RedParams,
    Topology,
    Tunnel,
    link_addresses,
    tunnel_addresses,
)

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
    "parse_ss_memory",
    "SocketMemory",
    "parse_sockperf",
    "parse_tc_qdiscs",
    "qdisc_available",
    "sweep_stale",
    "unavailable_reason",
]
