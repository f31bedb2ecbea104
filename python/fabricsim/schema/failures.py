"""The ``failures`` section: links that go down during the run, and come back,
or are impaired for a while (``docs/models/failures.md``).

Each entry names a link by its two end nodes (``between``; ``link`` picks
one of several parallel links, from 0 in topology order) or a node whose
links all fail (``node``: a switch or host failure), when it goes down
(``at``), when it comes back (``until``, never if unset), how long routing
takes to react to each change (``detect``) and, with ``per_hop``, how much
later each hop away from the failed link the nodes farther away react; ``per_node`` gives named
nodes a delay of their own after ``detect`` (a switch's own convergence time). With ``rate`` (a lower rate)
or ``loss`` (a probability of losing each frame), the entry is an
impairment instead: the links stay up and in the routes, degraded from
``at`` to ``until``."""

from typing import Any, Optional

from pydantic import Field, model_validator

from fabricsim.schema._base import DeferredModel, Rate, Time, U32_MAX, issues_error

__all__ = ["LinkFailure"]


class LinkFailure(DeferredModel):
    """A link (``between``), or every link of a ``node``, that fails at ``at``
    (both directions) and, with ``until``, recovers."""

    between: Optional[list[str]] = Field(default=None, min_length=2, max_length=2)
    node: Optional[str] = Field(default=None, min_length=1)
    link: int = Field(default=0, ge=0, le=U32_MAX)
    at: Time
    until: Optional[Time] = None
    detect: Time = 0
    per_hop: Time = 0
    per_node: dict[str, Time] = Field(default_factory=dict)
    rate: Optional[Rate] = None
    loss: Optional[float] = Field(default=None, ge=0.0, lt=1.0)

    @model_validator(mode="after")
    def _order(self) -> "LinkFailure":
        if (self.between is None) == (self.node is None):
            raise issues_error(("between", "give either `between` (a link's two nodes) or `node` (all its links)"))
        if self.between is not None and self.between[0] == self.between[1]:
            raise issues_error(("between", f"a link joins two different nodes (got {self.between[0]!r} twice)"))
        if self.until is not None and self.until <= self.at:
            raise issues_error(("until", "must be after `at`"))
        for name in ("detect", "per_hop", "per_node"):
            if (self.rate is not None or self.loss is not None) and getattr(self, name):
                raise issues_error(
                    (name, "applies to links that go down; an impaired link (`rate`, `loss`) stays in the routes")
                )
        return self

    def to_resolved(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nth": self.link, "at_ps": self.at, "detect_ps": self.detect}
        if self.per_hop:
            out["per_hop_ps"] = self.per_hop
        if self.per_node:
            out["per_node_ps"] = dict(sorted(self.per_node.items()))
        if self.between is not None:
            out["between"] = list(self.between)
        else:
            out["node"] = self.node
        if self.until is not None:
            out["until_ps"] = self.until
        if self.rate is not None:
            out["rate_bps"] = self.rate
        if self.loss is not None:
            out["loss"] = self.loss
        return out
