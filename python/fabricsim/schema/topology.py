"""The ``topology`` section: links and the topology kinds (star, dumbbell, leaf-spine, fat tree, rail-optimised, explicit).

A new kind is a :class:`~fabricsim.schema._base.KindModel` with a ``kind:
Literal[...]`` field and a ``to_resolved()``, added to :data:`Topology` (each
kind's validator is built the first time a scenario has it).
"""

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, PlainValidator, WithJsonSchema, model_validator

from fabricsim.schema._base import U32_MAX, KindModel, Model, Rate, Time, issues_error, kinds, one_of, show

__all__ = ["Dumbbell", "Explicit", "ExplicitLink", "ExplicitNode", "FatTree", "LeafSpine", "Link", "Rail", "Star",
           "Topology"]

NodeKind = Literal["host", "switch"]

MAX_NODES = 1 << 20
"""Nodes a topology may have (the core's limit; docs/scenarios.md, "Limits")."""
MAX_PORTS = 65_534
"""Ports a node may have (the core numbers them in 16 bits)."""


def _too_many_nodes(field: str, nodes: int) -> Any:
    return issues_error((field, f"makes {nodes:,} nodes; at most {MAX_NODES:,} are supported"))


def _too_many_ports(field: str, node: str, ports: int) -> Any:
    return issues_error(
        (field, f"gives {node} {ports:,} ports; a node has at most {MAX_PORTS:,} (local port numbers are 16-bit)")
    )



class Link(Model):
    """Rate, propagation delay and (optional) random loss rate of a link."""

    rate: Rate
    delay: Time
    loss: float = Field(default=0.0, ge=0.0, lt=1.0)

    def to_resolved(self) -> dict[str, Any]:
        return {"rate_bps": self.rate, "delay_ps": self.delay, "loss": self.loss}


class Star(KindModel):
    """One switch ``sw0`` with hosts ``h0..h{hosts-1}``."""

    kind: Literal["star"]
    hosts: int = Field(ge=1, le=U32_MAX)
    link: Link

    @model_validator(mode="after")
    def _size(self) -> "Star":
        if self.hosts > MAX_PORTS:
            raise _too_many_ports("hosts", "sw0", self.hosts)
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {"kind": self.kind, "hosts": self.hosts, "link": self.link.to_resolved()}


class Dumbbell(KindModel):
    """Switches ``sw_left``/``sw_right`` joined by a bottleneck link."""

    kind: Literal["dumbbell"]
    left: int = Field(ge=1, le=U32_MAX)
    right: int = Field(ge=1, le=U32_MAX)
    edge_link: Link
    bottleneck_link: Link

    @model_validator(mode="after")
    def _size(self) -> "Dumbbell":
        for field, switch, hosts in (("left", "sw_left", self.left), ("right", "sw_right", self.right)):
            if hosts + 1 > MAX_PORTS:
                raise _too_many_ports(field, switch, hosts + 1)
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "left": self.left,
            "right": self.right,
            "edge_link": self.edge_link.to_resolved(),
            "bottleneck_link": self.bottleneck_link.to_resolved(),
        }


def _hosts_per_leaf(value: Any) -> Union[int, list[int]]:
    def is_int(item: Any) -> bool:
        return isinstance(item, int) and not isinstance(item, bool)

    if is_int(value):
        if not 1 <= value <= U32_MAX:
            raise ValueError(f"must be from 1 to {U32_MAX} (got {value})")
        return int(value)
    if isinstance(value, list) and value and all(is_int(item) for item in value):
        if any(not 0 <= item <= U32_MAX for item in value):
            raise ValueError(f"host counts must be from 0 to {U32_MAX} (got {value})")
        if sum(value) == 0:
            raise ValueError("at least one leaf must have hosts")
        return list(value)
    raise ValueError(f"expected a host count or a list with one count per leaf, got {show(value)}")


class LeafSpine(KindModel):
    """Two-tier Clos: ``leaf{i}``, ``spine{j}``, hosts ``h{n}`` numbered leaf by leaf.

    ``hosts_per_leaf`` is one count for every leaf or a list with one count per leaf.
    """

    kind: Literal["leaf_spine"]
    leaves: int = Field(ge=1, le=U32_MAX)
    spines: int = Field(ge=1, le=U32_MAX)
    hosts_per_leaf: Annotated[
        Union[int, list[int]],
        PlainValidator(_hosts_per_leaf),
        WithJsonSchema(
            {
                "description": "hosts on every leaf, or one count per leaf",
                "anyOf": [{"type": "integer", "minimum": 1}, {"type": "array", "items": {"type": "integer", "minimum": 0}}],
            }
        ),
    ]
    host_link: Link
    fabric_link: Link
    links_per_spine: int = Field(default=1, ge=1, le=U32_MAX)

    @model_validator(mode="after")
    def _one_count_per_leaf(self) -> "LeafSpine":
        counts = self.hosts_per_leaf
        if isinstance(counts, list) and len(counts) != self.leaves:
            raise issues_error(("hosts_per_leaf", f"has {len(counts)} entries but there are {self.leaves} leaves"))
        # The sizes the core checks before it builds anything, checked here too
        # so that nothing (the workload generator's host list) grows first.
        hosts = sum(counts) if isinstance(counts, list) else counts * self.leaves
        most = max(counts) if isinstance(counts, list) else counts
        if hosts + self.leaves + self.spines > MAX_NODES:
            raise _too_many_nodes("hosts_per_leaf", hosts + self.leaves + self.spines)
        if self.leaves * self.links_per_spine > MAX_PORTS:
            raise _too_many_ports("leaves", "each spine", self.leaves * self.links_per_spine)
        uplinks = self.spines * self.links_per_spine
        if uplinks + most > MAX_PORTS:
            field = "hosts_per_leaf" if most >= uplinks else "links_per_spine"
            raise _too_many_ports(field, "a leaf", uplinks + most)
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "leaves": self.leaves,
            "spines": self.spines,
            "hosts_per_leaf": self.hosts_per_leaf,
            "host_link": self.host_link.to_resolved(),
            "fabric_link": self.fabric_link.to_resolved(),
            "links_per_spine": self.links_per_spine,
        }


class FatTree(KindModel):
    """k-ary fat tree: ``core{i}``, ``agg{pod}_{i}``, ``edge{pod}_{i}``, hosts ``h{n}``."""

    kind: Literal["fat_tree"]
    k: int = Field(ge=2, le=64)
    link: Link

    @model_validator(mode="after")
    def _even_k(self) -> "FatTree":
        if self.k % 2:
            raise issues_error(("k", f"must be even (got {self.k})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {"kind": self.kind, "k": self.k, "link": self.link.to_resolved()}


class Rail(KindModel):
    """A rail-optimised GPU fabric: ``servers`` servers of ``gpus_per_server``
    GPUs, each GPU with its own NIC, host ``s{server}g{gpu}``; NIC g of every
    server on rail leaf ``rail{g}``, every rail leaf joined to every spine
    ``spine{j}`` by ``links_per_spine`` links (no spine: the rails are not
    joined). With ``pods`` > 1, a three-tier rail-optimised fat-tree: each pod
    has ``servers`` servers, its own rail leaves ``p{pod}rail{g}`` and spines
    ``p{pod}spine{j}``, and every pod spine is joined to every core switch
    ``core{c}`` by ``links_per_core`` links; servers are numbered across pods.
    Resolved as an explicit topology (``docs/models/rail-topology.md``)."""

    kind: Literal["rail"]
    servers: int = Field(ge=1, le=U32_MAX)
    gpus_per_server: int = Field(ge=1, le=U32_MAX)
    spines: int = Field(default=0, ge=0, le=U32_MAX)
    nic_link: Link
    fabric_link: Optional[Link] = None
    links_per_spine: int = Field(default=1, ge=1, le=U32_MAX)
    pods: int = Field(default=1, ge=1, le=U32_MAX)
    cores: int = Field(default=0, ge=0, le=U32_MAX)
    core_link: Optional[Link] = None
    links_per_core: int = Field(default=1, ge=1, le=U32_MAX)

    @model_validator(mode="after")
    def _size(self) -> "Rail":
        per_pod = self.servers * self.gpus_per_server + self.gpus_per_server + self.spines
        nodes = self.pods * per_pod + self.cores
        if nodes > MAX_NODES:
            raise _too_many_nodes("servers", nodes)
        uplinks = self.spines * self.links_per_spine
        if self.servers + uplinks > MAX_PORTS:
            raise _too_many_ports("servers", "a rail leaf", self.servers + uplinks)
        spine_ports = self.gpus_per_server * self.links_per_spine + self.cores * self.links_per_core
        if spine_ports > MAX_PORTS:
            raise _too_many_ports("gpus_per_server", "each spine", spine_ports)
        if self.pods * self.spines * self.links_per_core > MAX_PORTS:
            raise _too_many_ports("pods", "each core", self.pods * self.spines * self.links_per_core)
        if self.spines and self.fabric_link is None:
            raise issues_error(("fabric_link", "required when there are spines"))
        if self.pods > 1 and not self.spines:
            raise issues_error(("spines", "pods are joined through their spines: give at least one"))
        if self.pods > 1 and not self.cores:
            raise issues_error(("cores", "pods are joined by core switches: give at least one"))
        if self.cores and self.pods == 1:
            raise issues_error(("cores", "join pods (pods is 1): give pods > 1, or no cores"))
        if self.cores and self.core_link is None:
            raise issues_error(("core_link", "required when there are cores"))
        if self.core_link is not None and not self.cores:
            raise issues_error(("core_link", "applies to the links of core switches (cores is 0)"))
        return self

    def hosts(self) -> list[str]:
        """The GPUs' NICs, server by server (across pods)."""
        return [f"s{s}g{g}" for s in range(self.pods * self.servers) for g in range(self.gpus_per_server)]

    def _prefix(self, pod: int) -> str:
        return f"p{pod}" if self.pods > 1 else ""

    def to_resolved(self) -> dict[str, Any]:
        gpus = self.gpus_per_server
        nodes = [{"name": h, "kind": "host"} for h in self.hosts()]
        nic = self.nic_link.to_resolved()
        links = []
        for pod in range(self.pods):
            pre = self._prefix(pod)
            nodes += [{"name": f"{pre}rail{g}", "kind": "switch"} for g in range(gpus)]
            nodes += [{"name": f"{pre}spine{j}", "kind": "switch"} for j in range(self.spines)]
            servers = range(pod * self.servers, (pod + 1) * self.servers)
            links += [{"a": f"s{s}g{g}", "b": f"{pre}rail{g}", **nic} for s in servers for g in range(gpus)]
        nodes += [{"name": f"core{c}", "kind": "switch"} for c in range(self.cores)]
        if self.spines:
            fabric = self.fabric_link.to_resolved()  # type: ignore[union-attr]
            for pod in range(self.pods):
                pre = self._prefix(pod)
                links += [{"a": f"{pre}rail{g}", "b": f"{pre}spine{j}", **fabric}
                          for g in range(gpus) for j in range(self.spines) for _ in range(self.links_per_spine)]
        if self.cores:
            core = self.core_link.to_resolved()  # type: ignore[union-attr]
            links += [{"a": f"p{pod}spine{j}", "b": f"core{c}", **core}
                      for pod in range(self.pods) for j in range(self.spines) for c in range(self.cores)
                      for _ in range(self.links_per_core)]
        return {"kind": "explicit", "nodes": nodes, "links": links}


class ExplicitNode(Model):
    """A named host or switch of an explicit topology."""

    name: str = Field(min_length=1)
    kind: Annotated[NodeKind, one_of(NodeKind)]

    def to_resolved(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind}


class ExplicitLink(Model):
    """A link between two named nodes of an explicit topology."""

    a: str = Field(min_length=1)
    b: str = Field(min_length=1)
    rate: Rate
    delay: Time
    loss: float = Field(default=0.0, ge=0.0, lt=1.0)

    def to_resolved(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "rate_bps": self.rate, "delay_ps": self.delay, "loss": self.loss}


class Explicit(KindModel):
    """Nodes and links listed one by one."""

    kind: Literal["explicit"]
    nodes: list[ExplicitNode] = Field(min_length=1)
    links: list[ExplicitLink]

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "nodes": [node.to_resolved() for node in self.nodes],
            "links": [link.to_resolved() for link in self.links],
        }


#: The topology: one of these by its ``kind``, each kind's validator built on first use.
Topology = kinds(Star, Dumbbell, LeafSpine, FatTree, Rail, Explicit)
