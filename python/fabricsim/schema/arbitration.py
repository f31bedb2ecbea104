"""A switch's ``arbitration`` between the inputs of an egress port (``docs/models/arbitration.md``).

Every switch has one, so it is kept apart from :mod:`fabricsim.schema.pipeline`,
whose validators are built and whose module is imported only by scenarios
with a pipeline.
"""

from typing import Annotated, Any, Literal, Optional

from pydantic import Field, model_validator

from fabricsim.schema._base import Model, Size, issues_error, one_of

__all__ = ["Arbitration", "ArbitrationKind"]

ArbitrationKind = Literal["fifo", "round_robin", "hierarchical"]


class Arbitration(Model):
    """How an egress port divides its bandwidth among inputs: ``fifo`` (in buffer
    admission order), ``round_robin`` (per-input sub-queues in turn) or
    ``hierarchical`` (groups in turn, then inputs in a group; groups from
    ``port_group``, ``groups`` equal blocks, or the pipeline's pipes).
    ``input_queue_size`` limits the bytes each input holds in an egress queue."""

    kind: Annotated[ArbitrationKind, one_of(ArbitrationKind)] = "fifo"
    input_queue_size: Optional[Size] = None
    groups: Optional[int] = Field(default=None, ge=1, le=65535)
    port_group: Optional[list[Annotated[int, Field(ge=0, le=65535)]]] = None

    @model_validator(mode="after")
    def _fields_of_kind(self) -> "Arbitration":
        if self.kind != "hierarchical":
            for name in ("groups", "port_group"):
                if getattr(self, name) is not None:
                    raise issues_error((name, f"only for kind hierarchical (kind is {self.kind})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "input_queue_bytes": self.input_queue_size}
        if self.kind == "hierarchical":
            out["groups"] = self.groups
            out["port_group"] = self.port_group
        return out
