"""The whole scenario: top-level settings, reading YAML, ``--set`` overrides and resolving for the core.

A scenario file looks like::

    name: quickstart
    seed: 1
    duration: 10ms
    topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
    traffic:
      - {kind: udp_cbr, src: [h1, h2], dst: h0, rate: 40%}

:func:`load` reads and validates a file, :meth:`Scenario.to_resolved` turns
the result into the plain-integer JSON document described in
``docs/contract.md``. Every problem is reported as a
:class:`~fabricsim.errors.ScenarioError` naming the dotted field path
(``traffic[1].rate``) and, for enumerations and unknown keys, the allowed
names.
"""

import copy
import os
import re
from pathlib import Path
from typing import Annotated, Any, Optional, Sequence, Union

import yaml
from pydantic import Field, PrivateAttr, ValidationError, model_validator

from fabricsim.errors import ScenarioError
from fabricsim.schema import _yaml
from fabricsim.schema._base import Duration, Load, Model, U64_MAX, deferred, issues_error, show, validation_issues
from fabricsim.schema.failures import LinkFailure
from fabricsim.schema.multicast import Multicast
from fabricsim.schema.network import Network
from fabricsim.schema.stats import FctSettings, Stats
from fabricsim.schema.topology import Topology
from fabricsim.schema._base import one_of
from fabricsim.schema.traffic import Collective, LoadBasis, TcpFlows, Traffic, Workload
from fabricsim.schema.transports import Roce, Tcp

__all__ = ["Scenario", "from_dict", "load", "loads"]


def _resolve_source(scenario: "Scenario", index: int, source: Any) -> dict[str, Any]:
    """A traffic entry in resolved form; workloads expand to explicit flow lists."""
    if isinstance(source, Workload):
        # The flow generator (and numpy) is imported only by scenarios that use it.
        from fabricsim.workloads import flowgen

        # An arrivals window too short for this load may hold no flow at all: that
        # is a valid (empty) workload, not an error.
        return source._resolved("tcp_flows", {"flows": flowgen.generate(scenario, index)})
    if isinstance(source, Collective):
        from fabricsim.workloads import collectives

        flows = collectives.resolved_flows(scenario, index)
        if source.transport == "roce":
            return {
                "kind": "rdma_flows",
                "name": source.name,
                "flows": flows,
                "class": source.class_,
                "roce": source.roce.to_resolved() if source.roce is not None else None,
            }
        return source._resolved("tcp_flows", {"flows": flows})
    if isinstance(source, TcpFlows):
        return source.to_resolved(scenario.source, index)
    return source.to_resolved()


class Scenario(Model):
    """A validated scenario. Quantities are held as integers (ps, bit/s, bytes).

    Build one with :func:`load`, :func:`loads` or :func:`from_dict`; those
    also record where it came from (:attr:`source`, :attr:`source_text`,
    :attr:`source_data`, :attr:`overrides`).
    """

    #: A label for outputs and pages (at most 200 characters: it heads tables and titles).
    name: str = Field(default="scenario", min_length=1, max_length=200)
    description: Optional[str] = Field(default=None, max_length=10_000)
    seed: int = Field(default=1, ge=0, le=U64_MAX)
    duration: Duration
    drain: bool = True
    drain_limit: Duration = 10**12
    network: Network = Field(default_factory=Network)
    topology: Topology
    traffic: list[Traffic] = Field(default_factory=list)
    stats: Stats = Field(default_factory=Stats)
    tcp: Tcp = Field(default_factory=Tcp)
    load: Optional[Load] = None  # default offered load of workload traffic entries
    # what that load counts by default: bytes on the wire (headers, preamble, gap) or application bytes
    load_basis: Annotated[LoadBasis, one_of(LoadBasis)] = "wire"
    fct: FctSettings = Field(default_factory=FctSettings)
    roce: Optional[deferred(Roce)] = None  # defaults of RoCE traffic (core defaults when unset)
    multicast: Multicast = Field(default_factory=Multicast)
    failures: list[deferred(LinkFailure)] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _merge_tcp_defaults(cls, data: Any) -> Any:
        """A traffic entry's ``tcp`` overrides only the fields it names; the
        rest come from the scenario's ``tcp`` section."""
        if not isinstance(data, dict) or not isinstance(data.get("traffic"), list):
            return data
        base = data.get("tcp") if isinstance(data.get("tcp"), dict) else {}
        traffic = []
        for entry in data["traffic"]:
            if isinstance(entry, dict) and isinstance(entry.get("tcp"), dict):
                merged = copy.deepcopy(base)
                for key, value in entry["tcp"].items():
                    if isinstance(value, dict) and isinstance(merged.get(key), dict):
                        merged[key] = {**merged[key], **value}
                    else:
                        merged[key] = value
                entry = {**entry, "tcp": merged}
            traffic.append(entry)
        return {**data, "traffic": traffic}

    _source: Optional[str] = PrivateAttr(None)
    _source_text: Optional[str] = PrivateAttr(None)
    _source_data: Optional[dict[str, Any]] = PrivateAttr(None)
    _overrides: tuple[str, ...] = PrivateAttr(())

    @model_validator(mode="after")
    def _check_traffic(self) -> "Scenario":
        issues = []
        first_use: dict[str, int] = {}
        for index, source in enumerate(self.traffic):
            if source.name is None:
                source.name = f"{source.kind}{index}"
            if source.name in first_use:
                issues.append(
                    (
                        f"traffic[{index}].name",
                        f"duplicate name {source.name!r} (also traffic[{first_use[source.name]}])",
                    )
                )
            first_use.setdefault(source.name, index)
            group = getattr(source, "group", None)
            if group is not None and group not in self.multicast.names():
                known = ", ".join(self.multicast.names()) or "none defined in multicast.groups"
                issues.append((f"traffic[{index}].group", f"unknown group {group!r}; known: {known}"))
            if source.class_ >= self.network.classes:
                issues.append(
                    (
                        f"traffic[{index}].class",
                        f"must be < network.classes ({self.network.classes}) (got {source.class_})",
                    )
                )
        if issues:
            raise issues_error(*issues)
        return self

    @classmethod
    def from_dict(cls, data: dict[str, Any], overrides: Sequence[str] = (), source: Optional[str] = None) -> "Scenario":
        """Same as the module-level :func:`from_dict`."""
        return from_dict(data, overrides, source)

    @property
    def source(self) -> Optional[str]:
        """The file the scenario was read from, if any."""
        return self._source

    @property
    def source_text(self) -> Optional[str]:
        """The YAML text as read, before overrides, if the scenario came from text."""
        return self._source_text

    @property
    def source_data(self) -> Optional[dict[str, Any]]:
        """The document after ``--set`` overrides, before validation and defaults."""
        return copy.deepcopy(self._source_data)

    @property
    def overrides(self) -> tuple[str, ...]:
        """The ``key=value`` overrides applied to the source document."""
        return self._overrides

    def with_seed(self, seed: int) -> "Scenario":
        """A copy of this scenario with another seed."""
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= U64_MAX:
            raise ScenarioError([("seed", f"must be an integer from 0 to 2**64 - 1 (got {show(seed)})")], self._source)
        return self.model_copy(update={"seed": seed})

    def to_resolved(self) -> dict[str, Any]:
        """The resolved JSON document accepted by ``fabricsim._core.Simulation``."""
        return {
            "name": self.name,
            "seed": self.seed,
            "duration_ps": self.duration,
            "drain": self.drain,
            "drain_limit_ps": self.drain_limit,
            "network": self.network.to_resolved(),
            "topology": self.topology.to_resolved(),
            "traffic": [_resolve_source(self, index, source) for index, source in enumerate(self.traffic)],
            "stats": self.stats.to_resolved(),
            "tcp": self.tcp.to_resolved(),
            **({"roce": self.roce.to_resolved()} if self.roce is not None else {}),
            **({"multicast": self.multicast.to_resolved()} if self.multicast.groups else {}),
            **({"failures": [f.to_resolved() for f in self.failures]} if self.failures else {}),
        }

    def to_yaml(self) -> str:
        """The scenario as YAML with every default spelled out, in exact units.

        Loading this text gives a scenario with the same :meth:`to_resolved`.
        """
        header = ["# fabricsim scenario with all defaults filled in"]
        if self._source:
            header.append(f"# source: {self._source}")
        header.extend(f"# --set {override}" for override in self._overrides)
        body = _yaml.dump(self.model_dump(mode="json", by_alias=True))
        return "\n".join(header) + "\n" + body


# --------------------------------------------------------------------------
# Loading


MAX_DEPTH = 64
"""Deepest nesting of mappings and lists a scenario document may have (scenarios use fewer than 10)."""

MAX_VALUES = 20_000_000
"""Most values (mappings, lists and scalars, each alias counted once per use) a
scenario document may hold: an explicit list of 4,194,304 flows (the core's
limit) of four fields each is 21 million, and a document whose aliases expand
beyond this (a "billion laughs" of nested aliases) is refused before anything
walks the expanded tree."""


READ_BYTES_PER_CHARACTER = 72
"""Memory reading a scenario's YAML takes per character of text, at its peak:
PyYAML composes the whole document's node tree (every scalar with two source
marks) before it builds the values. Measured on an explicit flow list (200,000
flows, 11 MB of text, 785 MB resident once read)."""

VALIDATE_BYTES_PER_ITEM = 1700
"""Memory one entry of a traffic list (an explicit flow) takes from the parsed
document to the resolved scenario: the document's copy (~400 B), the validated
model (~1,100 B) and its resolved form (~180 B), measured on 200,000 flows."""


def _memory_refusal(needed: int, what: str) -> Optional[str]:
    """A message if ``needed`` bytes (for ``what``) are more than this process
    may still take (:mod:`fabricsim.machine_memory`), else ``None``."""
    from fabricsim import machine_memory

    short = machine_memory.shortfall(needed)
    if short is None:
        return None
    return (f"{what} would take {short} (give a long flow list as a Parquet or CSV `flows_file`, generate "
            "large flow sets with `kind: workload`, or give fewer flows)")


def _reading_error(text: str) -> Optional[str]:
    """A message if reading ``text`` as YAML would take more memory than is available."""
    if len(text) < 1 << 20:
        return None
    return _memory_refusal(len(text) * READ_BYTES_PER_CHARACTER,
                           f"reading this {len(text) / 2**20:,.0f} MB document")


def _listed_items_error(data: dict[str, Any]) -> Optional[tuple[str, str]]:
    """(field, message) if validating the explicit lists of the traffic entries
    (``traffic[i].flows``, ...) would take more memory than is available; the
    field is the longest list."""
    traffic = data.get("traffic")
    if not isinstance(traffic, list):
        return None
    items, longest, where = 0, 0, ""
    for i, entry in enumerate(traffic):
        if not isinstance(entry, dict):
            continue
        for key, value in entry.items():
            if isinstance(value, list):
                items += len(value)
                if len(value) > longest:
                    longest, where = len(value), f"traffic[{i}].{key}"
    if items < 10_000:
        return None
    message = _memory_refusal(items * VALIDATE_BYTES_PER_ITEM,
                              f"validating {items:,} listed entries ({longest:,} in this list)")
    return (where, message) if message else None


def _shape_error(data: Any) -> Optional[str]:
    """A message if ``data`` nests deeper than :data:`MAX_DEPTH` or holds more than
    :data:`MAX_VALUES` values once its aliases are expanded (a mapping or list
    shared by aliases is one object, measured once: without recursion, in time
    proportional to the objects, not to the expanded tree)."""
    measured: dict[int, tuple[int, int]] = {}  # id of a mapping or list -> (expanded values, depth)
    open_ = set()  # ids being measured: meeting one again is a cycle (an alias inside its own anchor)
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        key = id(node)
        children = node.values() if isinstance(node, dict) else node
        if children_done:
            values, depth = 1, 1
            for child in children:
                if isinstance(child, (dict, list)):
                    child_values, child_depth = measured[id(child)]
                    values += child_values
                    depth = max(depth, child_depth + 1)
                else:
                    values += 1
            open_.discard(key)
            if depth > MAX_DEPTH:
                break
            if values > MAX_VALUES:
                return (f"the document holds more than {MAX_VALUES:,} values once its aliases are expanded "
                        "(an alias counts as a copy of its anchor)")
            measured[key] = (values, depth)
        elif key in open_:
            break  # an alias inside its own anchor: nested without end
        elif key not in measured:
            open_.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children
                         if isinstance(child, (dict, list)) and id(child) not in measured)
    else:
        return None
    return f"the document nests mappings and lists more than {MAX_DEPTH} levels deep"


def _parse_yaml(text: str, source: Optional[str]) -> Any:
    too_large = _reading_error(text)
    if too_large:
        raise ScenarioError([("", too_large)], source)
    try:
        return _yaml.parse(text)
    except RecursionError:
        raise ScenarioError([("", f"invalid YAML: nested more than {MAX_DEPTH} levels deep")], source) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "syntax error"
        raise ScenarioError([("", f"invalid YAML{where}: {problem}")], source) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([("", f"invalid YAML: {exc}")], source) from None


def _kind_name(value: Any) -> str:
    if value is None:
        return "null"
    return {str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), type(value).__name__)


def _apply_override(document: dict[str, Any], override: str, source: Optional[str]) -> None:
    """Apply one ``dotted.path=value`` override in place."""
    key, sep, raw = override.partition("=")
    key = key.strip()
    label = f"--set {key}" if key else "--set"
    if not sep or not key:
        raise ScenarioError([(label, f"expected KEY=VALUE, got {override!r}")], source)
    try:
        value = _yaml.parse_value(raw)
    except RecursionError:
        raise ScenarioError([(label, f"the value nests more than {MAX_DEPTH} levels deep")], source) from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError([(label, f"invalid value {raw!r}: {problem}")], source) from None
    parts = re.sub(r"\[(\d+)\]", r".\1", key).split(".")
    if not all(parts):
        raise ScenarioError([(label, "empty component in the key path")], source)
    node: Any = document
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[:depth]) or "the top level"
        if isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if node.get(part) is None:
                    node[part] = {}
                node = node[part]
        elif isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(
                    [(label, f"{where} is a list of {len(node)} entries; {part!r} is not an index in it")], source
                )
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        else:
            raise ScenarioError([(label, f"cannot set {part!r} inside {where}, which is a {_kind_name(node)}")], source)


def _build(
    data: Any,
    *,
    overrides: Sequence[str],
    source: Optional[str],
    text: Optional[str],
    default_name: Optional[str],
) -> Scenario:
    if data is None:
        raise ScenarioError([("", "the scenario is empty")], source)
    if not isinstance(data, dict):
        raise ScenarioError([("", f"expected a mapping of scenario settings, got {show(data)}")], source)
    too_deep = _shape_error(data)
    if too_deep:
        raise ScenarioError([("", too_deep)], source)
    too_many = _listed_items_error(data)
    if too_many:
        raise ScenarioError([too_many], source)
    document = copy.deepcopy(data)
    for override in overrides:
        _apply_override(document, override, source)
    too_deep = _shape_error(document)
    if too_deep:
        raise ScenarioError([("", too_deep)], source)
    candidate = document if "name" in document or not default_name else {"name": default_name, **document}
    try:
        scenario = Scenario.model_validate(candidate)
    except ValidationError as exc:
        raise ScenarioError(validation_issues(exc, candidate), source) from None
    scenario._source = source
    scenario._source_text = text
    scenario._source_data = document
    scenario._overrides = tuple(overrides)
    return scenario


def load(path: Union[str, "os.PathLike[str]"], overrides: Sequence[str] = ()) -> Scenario:
    """Read, override and validate a YAML scenario file.

    ``overrides`` are ``dotted.path=value`` strings (``traffic.0.rate=5Gbps``,
    ``traffic[0].rate=5Gbps`` works too); values are parsed as YAML and
    missing mapping keys are created. Without a ``name`` key the scenario is
    named after the file. Raises :class:`ScenarioError` for any problem,
    including a missing or unreadable file.
    """
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError([("", "file not found")], source) from None
    except UnicodeDecodeError:
        raise ScenarioError([("", "not a UTF-8 text file")], source) from None
    except OSError as exc:
        raise ScenarioError([("", f"cannot read file: {exc.strerror or exc}")], source) from None
    return _build(
        _parse_yaml(text, source), overrides=overrides, source=source, text=text, default_name=Path(source).stem
    )


def loads(text: str, overrides: Sequence[str] = (), source: Optional[str] = None) -> Scenario:
    """Validate a scenario given as YAML text; ``source`` labels error messages."""
    return _build(_parse_yaml(text, source), overrides=overrides, source=source, text=text, default_name=None)


def from_dict(data: dict[str, Any], overrides: Sequence[str] = (), source: Optional[str] = None) -> Scenario:
    """Validate a scenario given as a mapping (it is not modified)."""
    return _build(data, overrides=overrides, source=source, text=None, default_name=None)
