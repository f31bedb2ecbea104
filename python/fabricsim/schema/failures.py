"""The ``failures`` section: links that go down during the run, and come back
(``docs/models/failures.md``).

Each entry names a link by its two end nodes (``between``; ``link`` picks
one of several parallel links, from 0 in topology order) or a node whose
links all fail (``node``: a switch or host failure), when it goes down
(``at``), when it comes back (``until``, never if unset) and how long routing
takes to react to each change (``detect``)."""

from typing import Any, Optional

from pydantic import Field, model_validator

from fabricsim.schema._base import Model, Time, U32_MAX, issues_error

__all__ = ["LinkFailure"]


class LinkFailure(Model):
    """A link (``between``), or every link of a ``node``, that fails at ``at``
    (both directions) and, with ``until``, recovers."""

    between: Optional[list[str]] = Field(default=None, min_length=2, max_length=2)
    node: Optional[str] = Field(default=None, min_length=1)
    link: int = Field(default=0, ge=0, le=U32_MAX)
    at: Time
    until: Optional[Time] = None
    detect: Time = 0

    @model_validator(mode="after")
    def _order(self) -> "LinkFailure":
        if (self.between is None) == (self.node is None):
            raise issues_error(("between", "give either `between` (a link's two nodes) or `node` (all its links)"))
        if self.between is not None and self.between[0] == self.between[1]:
            raise issues_error(("between", f"a link joins two different nodes (got {self.between[0]!r} twice)"))
        if self.until is not None and self.until <= self.at:
            raise issues_error(("until", "must be after `at`"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nth": self.link, "at_ps": self.at, "detect_ps": self.detect}
        if self.between is not None:
            out["between"] = list(self.between)
        else:
            out["node"] = self.node
        if self.until is not None:
            out["until_ps"] = self.until
        return out
