"""The scenario schema: YAML with units, validated and resolved for the core.

One module per section of a scenario file, each importing only
:mod:`fabricsim.schema._base` and the sections it embeds:

- ``_base``: error plumbing, quantity types (``Time``, ``Rate``, ``Size``, ...), the ``Model`` base;
- ``network``: ``network`` (switch buffer, ECN, PFC, scheduler; hosts; device presets; overrides);
- ``pipeline``: match-action ``pipeline`` of a switch or NIC (stages, pipes); ``arbitration``: a switch's ``arbitration``;
- ``topology``: ``topology`` (links; star, dumbbell, leaf-spine, fat tree, explicit);
- ``transports``: ``tcp`` and ``roce`` (with DCQCN);
- ``traffic``: ``traffic`` entries (UDP, bursts, TCP applications, workloads, RDMA writes);
- ``multicast``: ``multicast`` (groups of member hosts);
- ``stats``: ``stats`` and ``fct``;
- ``scenario``: the top level, loading YAML, ``--set`` overrides;
- ``_yaml``: YAML reading and writing (libyaml when available).

``Pipeline`` (and the modules of pipelines and host models) is imported on first use.
"""

import importlib
from typing import TYPE_CHECKING, Any

from fabricsim import gcpause

if TYPE_CHECKING:
    from fabricsim.schema.pipeline import Pipeline

# The sections' validators are built as their classes are defined: hundreds of
# thousands of long-lived objects, walked by no collection meanwhile.
with gcpause.paused():
    from fabricsim.schema.multicast import Group, Multicast
    from fabricsim.schema.network import Buffer, DevicePower, Ecn, Host, Network, Pfc, Switch
    from fabricsim.schema.arbitration import Arbitration
    from fabricsim.schema.scenario import Scenario, from_dict, load, loads
    from fabricsim.schema.stats import FctSettings, Stats
    from fabricsim.schema.topology import Dumbbell, Explicit, ExplicitLink, ExplicitNode, FatTree, LeafSpine, Link, Star
    from fabricsim.schema.traffic import (
        Burst,
        Collective,
        RdmaFlows,
        RdmaWrite,
        TcpBulk,
        TcpFlowItem,
        TcpFlows,
        TcpIncast,
        TrafficRate,
        UdpTraffic,
        Workload,
        WorkloadPair,
    )
    from fabricsim.schema.transports import Dcqcn, DelayedAck, Roce, Tcp

__all__ = [
    "Arbitration",
    "Buffer",
    "Burst",
    "Collective",
    "Dcqcn",
    "DelayedAck",
    "DevicePower",
    "Dumbbell",
    "Ecn",
    "Explicit",
    "ExplicitLink",
    "ExplicitNode",
    "FatTree",
    "FctSettings",
    "Group",
    "Host",
    "LeafSpine",
    "Link",
    "Multicast",
    "Network",
    "Pfc",
    "Pipeline",
    "RdmaFlows",
    "RdmaWrite",
    "Roce",
    "Scenario",
    "Star",
    "Stats",
    "Switch",
    "Tcp",
    "TcpBulk",
    "TcpFlowItem",
    "TcpFlows",
    "TcpIncast",
    "TrafficRate",
    "UdpTraffic",
    "Workload",
    "WorkloadPair",
    "from_dict",
    "load",
    "loads",
]


def __getattr__(name: str) -> Any:
    if name == "Pipeline":
        with gcpause.paused():
            value = importlib.import_module("fabricsim.schema.pipeline").Pipeline
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fabricsim.schema' has no attribute {name!r}")
