"""The ``topology`` section: links and the topology kinds (star, dumbbell, leaf-spine, fat tree, explicit).

A new kind is a model with a ``kind: Literal[...]`` field and a
``to_resolved()``, added to the :data:`Topology` union.
"""

from typing import Annotated, Any, Literal, Union

from pydantic import Field, PlainValidator, model_validator

from fabricsim.schema._base import Model, Rate, Time, issues_error, kind_of, one_of, show

__all__ = ["Dumbbell", "Explicit", "ExplicitLink", "ExplicitNode", "FatTree", "LeafSpine", "Link", "Star", "Topology"]

NodeKind = Literal["host", "switch"]


class Link(Model):
    """Rate, propagation delay and (optional) random loss rate of a link."""

    rate: Rate
    delay: Time
    loss: float = Field(default=0.0, ge=0.0, lt=1.0)

    def to_resolved(self) -> dict[str, Any]:
        return {"rate_bps": self.rate, "delay_ps": self.delay, "loss": self.loss}


class Star(Model):
    """One switch ``sw0`` with hosts ``h0..h{hosts-1}``."""

    kind: Literal["star"]
    hosts: int = Field(ge=1)
    link: Link

    def to_resolved(self) -> dict[str, Any]:
        return {"kind": self.kind, "hosts": self.hosts, "link": self.link.to_resolved()}


class Dumbbell(Model):
    """Switches ``sw_left``/``sw_right`` joined by a bottleneck link."""

    kind: Literal["dumbbell"]
    left: int = Field(ge=1)
    right: int = Field(ge=1)
    edge_link: Link
    bottleneck_link: Link

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
        if value < 1:
            raise ValueError(f"must be >= 1 (got {value})")
        return int(value)
    if isinstance(value, list) and value and all(is_int(item) for item in value):
        if any(item < 0 for item in value):
            raise ValueError(f"host counts must be >= 0 (got {value})")
        if sum(value) == 0:
            raise ValueError("at least one leaf must have hosts")
        return list(value)
    raise ValueError(f"expected a host count or a list with one count per leaf, got {show(value)}")


class LeafSpine(Model):
    """Two-tier Clos: ``leaf{i}``, ``spine{j}``, hosts ``h{n}`` numbered leaf by leaf.

    ``hosts_per_leaf`` is one count for every leaf or a list with one count per leaf.
    """

    kind: Literal["leaf_spine"]
    leaves: int = Field(ge=1)
    spines: int = Field(ge=1)
    hosts_per_leaf: Annotated[Union[int, list[int]], PlainValidator(_hosts_per_leaf)]
    host_link: Link
    fabric_link: Link
    links_per_spine: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _one_count_per_leaf(self) -> "LeafSpine":
        counts = self.hosts_per_leaf
        if isinstance(counts, list) and len(counts) != self.leaves:
            raise issues_error(("hosts_per_leaf", f"has {len(counts)} entries but there are {self.leaves} leaves"))
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


class FatTree(Model):
    """k-ary fat tree: ``core{i}``, ``agg{pod}_{i}``, ``edge{pod}_{i}``, hosts ``h{n}``."""

    kind: Literal["fat_tree"]
    k: int = Field(ge=2)
    link: Link

    @model_validator(mode="after")
    def _even_k(self) -> "FatTree":
        if self.k % 2:
            raise issues_error(("k", f"must be even (got {self.k})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {"kind": self.kind, "k": self.k, "link": self.link.to_resolved()}


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


class Explicit(Model):
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


Topology = Annotated[
    Union[Star, Dumbbell, LeafSpine, FatTree, Explicit],
    Field(discriminator="kind"),
    kind_of(Star, Dumbbell, LeafSpine, FatTree, Explicit),
]
