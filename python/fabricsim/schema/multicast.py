"""The ``multicast`` section: named groups of member hosts (``docs/models/multicast.md``).

A UDP traffic entry sends to a group with ``group: NAME`` instead of ``dst``,
and picks how the group is reached with ``replication``: ``native`` (switches
replicate along the group's distribution tree) or ``unicast`` (the sender
sends one copy per member).
"""

from typing import Any

from pydantic import Field, model_validator

from fabricsim.schema._base import DeferredModel, Model, NodeList, deferred, issues_error

__all__ = ["Group", "Multicast"]


class Group(DeferredModel):
    """A multicast group: a name and its member hosts."""

    name: str = Field(min_length=1)
    members: NodeList

    @model_validator(mode="after")
    def _unique_members(self) -> "Group":
        seen = set()
        for index, member in enumerate(self.members):
            if member in seen:
                raise issues_error((f"members[{index}]", f"{member!r} is listed twice"))
            seen.add(member)
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {"name": self.name, "members": list(self.members)}


class Multicast(Model):
    """Multicast groups."""

    groups: list[deferred(Group)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> "Multicast":
        first: dict[str, int] = {}
        for index, group in enumerate(self.groups):
            if group.name in first:
                raise issues_error(
                    (f"groups[{index}].name", f"duplicate group name {group.name!r} (also groups[{first[group.name]}])")
                )
            first[group.name] = index
        return self

    def names(self) -> list[str]:
        return [group.name for group in self.groups]

    def to_resolved(self) -> dict[str, Any]:
        return {"groups": [group.to_resolved() for group in self.groups]}
