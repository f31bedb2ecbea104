"""The ``traffic`` section: UDP sources, bursts, TCP applications, workloads, collectives and RDMA writes.

A new kind is a :class:`~fabricsim.schema._base.KindModel` with a ``kind:
Literal[...]`` field, a ``name`` and a ``class_``, and a ``to_resolved()``,
added to :data:`TRAFFIC_MODELS` (the :data:`Traffic` field type: each kind's
validator is built the first time a scenario has it). ``workload`` entries are expanded into explicit flow
lists when the whole scenario is resolved
(:meth:`fabricsim.schema.Scenario.to_resolved`).
"""

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional, Sequence, Union

from pydantic import Field, PlainSerializer, PrivateAttr, PlainValidator, WithJsonSchema, model_validator

from fabricsim import units
from fabricsim.schema._base import (
    MAX_RATE,
    PERCENT_PATTERN,
    RATE_PATTERN,
    U32_MAX,
    U64_MAX,
    Count32,
    Duration,
    FrameSize,
    KindModel,
    Load,
    Model,
    NodeList,
    Size,
    Size32,
    Time,
    as_time,
    issues_error,
    deferred,
    kinds,
    one_of,
    show,
)
from fabricsim.schema.transports import Roce, Tcp

__all__ = [
    "TRAFFIC_MODELS",
    "Burst",
    "Collective",
    "Iperf3",
    "PingPong",
    "LoadBasis",
    "RdmaFlows",
    "RdmaWrite",
    "TcpBulk",
    "TcpFlowItem",
    "TcpFlows",
    "TcpIncast",
    "Traffic",
    "TrafficRate",
    "UdpTraffic",
    "Workload",
    "WorkloadPair",
]


MAX_FLOWS = 1 << 22
"""Flows a scenario may hold in all (the core's limit, docs/scenarios.md "Limits")."""

MAX_DEPENDENCIES = 1 << 26
"""Entries of ``after`` lists a collective may expand to: each takes about 40 B on the way to the core
(a list slot, an integer, its JSON text), so 2.7 GB at this limit (docs/scenarios.md "Limits")."""


@dataclass(frozen=True)
class TrafficRate:
    """Sending rate of a UDP source: absolute (``bps``) or a ``load`` fraction of its NIC rate."""

    bps: Optional[int] = None
    load: Optional[float] = None

    def __str__(self) -> str:
        if self.bps is not None:
            return units.format_rate(self.bps)
        return units.format_percent(self.load or 0.0)


def _traffic_rate(value: Any) -> TrafficRate:
    if isinstance(value, str) and value.strip().endswith("%"):
        load = units.parse_percent(value)
        if not 0 < load <= 1:
            raise ValueError(f"a load must be > 0% and <= 100% (got {value!r})")
        return TrafficRate(load=load)
    try:
        bps = units.parse_rate(value)
    except ValueError as exc:
        if str(exc).startswith("expected"):
            raise ValueError(
                f"expected a data rate like '10Gbps' or a load like '20%' of the source NIC rate, got {show(value)}"
            ) from None
        raise
    if bps == 0:
        raise ValueError(f"must be > 0 (got {show(value)})")
    if bps > MAX_RATE:
        raise ValueError(f"must be <= {units.format_rate(MAX_RATE)} (got {show(value)})")
    return TrafficRate(bps=bps)


class _Source(KindModel):
    """Fields shared by every traffic source."""

    kind: str
    name: Optional[str] = Field(default=None, min_length=1)
    src: NodeList
    dst: str = Field(min_length=1)
    frame_size: FrameSize = 1500
    start: Time = 0
    class_: int = Field(default=0, ge=0, le=7, alias="class")

    def _resolved(self, sending: dict[str, Any], until: dict[str, Any], ecn: bool) -> dict[str, Any]:
        """The resolved entry: the shared fields around the kind's own ``sending``
        (what is sent) and ``until`` (when it stops) fields; ``ecn`` only when set."""
        out = {
            "kind": self.kind,
            "name": self.name,
            "src": list(self.src),
            "dst": self.dst,
            **sending,
            "frame_bytes": self.frame_size,
            "start_ps": self.start,
            **until,
            "class": self.class_,
        }
        if ecn:
            out["ecn"] = True
        return out


class _Datagrams(_Source):
    """UDP sources: the DSCP of their packets, the destination port that
    match-action stages see (default 5001), and a random ``start_jitter``
    (each source starts up to that much after ``start``, from its own random
    stream: traffic generators' ports are not phase-locked)."""

    dscp: int = Field(default=0, ge=0, le=63)
    dst_port: Optional[int] = Field(default=None, ge=0, le=65535)
    start_jitter: Time = 0

    def _marking(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.start_jitter:
            out["start_jitter_ps"] = self.start_jitter
        if self.dscp:
            out["dscp"] = self.dscp
        if self.dst_port is not None:
            out["dst_port"] = self.dst_port
        return out


Replication = Literal["native", "unicast"]


class UdpTraffic(_Datagrams):
    """Constant-bit-rate or Poisson UDP frames from each ``src`` host to ``dst``,
    or to the multicast ``group`` (``replication: native`` or ``unicast``; the
    rate is the group's stream rate, each member receives it)."""

    kind: Literal["udp_cbr", "udp_poisson"]
    dst: Optional[str] = Field(default=None, min_length=1)  # type: ignore[assignment]
    group: Optional[str] = Field(default=None, min_length=1)
    replication: Annotated[Replication, one_of(Replication)] = "native"
    rate: Annotated[
        TrafficRate,
        PlainValidator(_traffic_rate),
        PlainSerializer(str, return_type=str),
        WithJsonSchema(
            {
                "description": "a data rate like '10Gbps', or a load like '20%' of the source NIC rate",
                "anyOf": [{"type": "string", "pattern": RATE_PATTERN}, {"type": "string", "pattern": PERCENT_PATTERN},
                          {"type": "integer", "minimum": 1, "maximum": MAX_RATE}],
            }
        ),
    ]
    stop: Optional[Time] = None
    max_frames: Optional[int] = Field(default=None, ge=1, le=U64_MAX)
    ecn: bool = False

    @model_validator(mode="after")
    def _stop_after_start(self) -> "UdpTraffic":
        if self.stop is not None and self.stop <= self.start:
            raise issues_error(
                ("stop", f"must be later than start ({as_time(self.start)}), got {as_time(self.stop)}")
            )
        if (self.dst is None) == (self.group is None):
            raise issues_error(("dst", "give either dst (a host) or group (a multicast group), not both"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        out = {
            **self._resolved(
                {"rate_bps": self.rate.bps, "load": self.rate.load},
                {"stop_ps": self.stop, "max_frames": self.max_frames},
                self.ecn,
            ),
            **self._marking(),
        }
        if self.group is not None:
            out["dst"] = ""
            out["group"] = self.group
            out["replication"] = self.replication
        return out


class Burst(_Datagrams):
    """``frames`` frames queued at once on each ``src`` host at ``start``. Unless
    ``start_jitter`` is given, each source starts at a random phase within one
    frame's time on its link: the bursts start together, but their frames do not
    reach a shared queue in the same order at every seed (0: all at the same
    picosecond)."""

    kind: Literal["burst"]
    frames: int = Field(ge=1, le=U64_MAX)
    ecn: bool = False
    start_jitter: Optional[Time] = None  # type: ignore[assignment]

    def to_resolved(self) -> dict[str, Any]:
        out = {**self._resolved({"frames": self.frames}, {}, self.ecn), **self._marking()}
        if self.start_jitter is not None:
            out["start_jitter_ps"] = self.start_jitter
        return out


class _TcpTraffic(KindModel):
    """Fields shared by TCP applications."""

    name: Optional[str] = Field(default=None, min_length=1)
    class_: int = Field(default=0, ge=0, le=7, alias="class")
    tcp: Optional[Tcp] = None

    def _resolved(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        """The resolved entry: ``kind``, ``name``, the app's own ``fields``, ``class`` and ``tcp``."""
        return {
            "kind": kind,
            "name": self.name,
            **fields,
            "class": self.class_,
            "tcp": self.tcp.to_resolved() if self.tcp is not None else None,
        }


class TcpBulk(_TcpTraffic):
    """iperf3-like: ``streams`` connections from each ``src`` to ``dst``, each
    sending ``size`` bytes, or sending for ``duration``."""

    kind: Literal["tcp_bulk"]
    src: NodeList
    dst: str = Field(min_length=1)
    streams: Count32 = 1
    size: Optional[Size] = None
    duration: Optional[Duration] = None
    start: Time = 0

    @model_validator(mode="after")
    def _size_or_duration(self) -> "TcpBulk":
        if self.size is None and self.duration is None:
            raise issues_error(("size", "give a size per stream (e.g. 10MB) or a duration (e.g. 1s)"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(
            self.kind,
            {
                "src": list(self.src),
                "dst": self.dst,
                "streams": self.streams,
                "bytes": self.size,
                "duration_ps": self.duration,
                "start_ps": self.start,
            },
        )


class TcpIncast(_TcpTraffic):
    """``client`` asks every server for ``response_size`` bytes (``flows_per_server``
    connections each); the next of ``rounds`` rounds starts ``gap`` after the last
    answer of the previous one."""

    kind: Literal["tcp_incast"]
    client: str = Field(min_length=1)
    servers: NodeList
    response_size: Size
    flows_per_server: Count32 = 1
    rounds: Count32 = 1
    gap: Time = 0
    start: Time = 0

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(
            self.kind,
            {
                "client": self.client,
                "servers": list(self.servers),
                "response_bytes": self.response_size,
                "flows_per_server": self.flows_per_server,
                "rounds": self.rounds,
                "gap_ps": self.gap,
                "start_ps": self.start,
            },
        )


FlowRef = Union[Annotated[int, Field(ge=0)], Annotated[str, Field(min_length=1)]]
"""A flow of the same list: its index (from 0) or its ``name``."""


class TcpFlowItem(Model):
    """One flow of an explicit list. ``after`` lists flows of the same list
    (index from 0, or ``name``) it waits for: it starts once all of them have
    completed, ``compute`` after the last one did, and not before ``start``."""

    name: Optional[str] = Field(default=None, min_length=1)
    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)
    size: Size
    start: Time = 0
    after: list[FlowRef] = Field(default_factory=list)
    compute: Time = 0

    def to_resolved(self, after: Sequence[int] = ()) -> dict[str, Any]:
        out = {"src": self.src, "dst": self.dst, "bytes": self.size, "start_ps": self.start}
        if after:
            out["after"] = list(after)
            if self.compute:
                out["compute_ps"] = self.compute
        return out


def dependency_cycle(after: Sequence[Sequence[int]]) -> Optional[list[int]]:
    """A cycle of the dependency lists ``after`` (flow ``j`` waits for
    ``after[j]``) as ``[j, k, ..., j]`` (j waits for k ...), or ``None``."""
    n = len(after)
    remaining = [len(a) for a in after]
    dependents: list[list[int]] = [[] for _ in range(n)]
    for j, deps in enumerate(after):
        for d in deps:
            dependents[d].append(j)
    ready = [j for j in range(n) if remaining[j] == 0]
    while ready:
        j = ready.pop()
        for w in dependents[j]:
            remaining[w] -= 1
            if remaining[w] == 0:
                ready.append(w)
    stuck = [j for j in range(n) if remaining[j] > 0]
    if not stuck:
        return None
    # Every stuck flow waits for a stuck flow: walking back reaches a cycle.
    def back(j: int) -> int:
        return next(d for d in after[j] if remaining[d] > 0)

    seen: set[int] = set()
    j = stuck[0]
    while j not in seen:
        seen.add(j)
        j = back(j)
    cycle = [j]
    k = back(j)
    while k != j:
        cycle.append(k)
        k = back(k)
    return cycle + [j]


def resolve_after(flows: Sequence[TcpFlowItem]) -> list[list[int]]:
    """Each flow's ``after`` as indices in ``flows``; unknown names or indices, a
    flow waiting for itself, ``compute`` without ``after`` and cycles are refused
    with the field named (``flows[j].after[k]``)."""
    issues: list[tuple[str, str]] = []
    names: dict[str, int] = {}
    for j, f in enumerate(flows):
        if f.name is not None:
            if f.name in names:
                issues.append((f"flows[{j}].name", f"duplicate name {f.name!r} (also flows[{names[f.name]}])"))
            names.setdefault(f.name, j)
    n = len(flows)
    after: list[list[int]] = []
    for j, f in enumerate(flows):
        deps: list[int] = []
        for k, ref in enumerate(f.after):
            field = f"flows[{j}].after[{k}]"
            if isinstance(ref, str):
                if ref not in names:
                    known = ", ".join(list(names)[:6]) or "no flow of this list has a name"
                    issues.append((field, f"unknown flow {ref!r} (names: {known})"))
                    continue
                index = names[ref]
            elif ref >= n:
                issues.append((field, f"no flow {ref} in this list (it has {n}, numbered from 0)"))
                continue
            else:
                index = ref
            if index == j:
                issues.append((field, "a flow cannot wait for itself"))
                continue
            deps.append(index)
        if f.compute and not f.after:
            issues.append((f"flows[{j}].compute", "applies after dependencies: give after as well"))
        after.append(deps)
    if issues:
        raise issues_error(*issues)
    cycle = dependency_cycle(after)
    if cycle is not None:
        shown = " waits for ".join(str(c) for c in cycle)
        raise issues_error((f"flows[{cycle[0]}].after", f"dependency cycle: flow {shown}"))
    return after


class TcpFlows(_TcpTraffic):
    """An explicit list of TCP flows (``src``, ``dst``, ``size``, ``start``;
    ``after`` and ``compute`` for flows that wait for others of the list), or
    a table of them in ``flows_file`` (Parquet or CSV: ``src``, ``dst``,
    ``size``, ``start``; :mod:`fabricsim.workloads.flowfile`)."""

    kind: Literal["tcp_flows"]
    flows: list[TcpFlowItem] = Field(default_factory=list)
    flows_file: Optional[str] = Field(default=None, min_length=1)
    _after: list[list[int]] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _dependencies(self) -> "TcpFlows":
        if (not self.flows) == (self.flows_file is None):
            raise issues_error(("flows", "give either a list of flows or a flows_file, not both"
                                if self.flows else "give a list of at least one flow, or a flows_file"))
        self._after = self._resolve_after()
        return self

    def _resolve_after(self) -> list[list[int]]:
        return resolve_after(self.flows)

    def to_resolved(self, scenario_source: Optional[str] = None, index: int = 0) -> dict[str, Any]:
        if self.flows_file is not None:
            from fabricsim.workloads.flowfile import read_flows

            flows = read_flows(self.flows_file, f"traffic[{index}].flows_file", scenario_source)
            return self._resolved(self.kind, {"flows": flows})
        after = self._after if len(self._after) == len(self.flows) else self._resolve_after()
        return self._resolved(self.kind, {"flows": [f.to_resolved(a) for f, a in zip(self.flows, after)]})


CollectiveAlgorithm = Literal["all_reduce", "reduce_scatter", "all_gather", "all_to_all"]
CollectiveSchedule = Literal["ring", "halving_doubling", "tree"]
CollectiveTransport = Literal["tcp", "roce"]

def _ceil(a: int, b: int) -> int:
    return -(-a // b)


TREE_CHUNK = 512 * 1024
"""``chunk_size`` of ``schedule: tree`` when not given: NCCL's tree chunk with the
Simple protocol, one step of its 4 MiB channel buffer (NCCL_BUFFSIZE) split in
NCCL_STEPS = 8 slots."""


class Collective(_TcpTraffic):
    """A collective operation of distributed training over TCP or RoCEv2, NCCL-like:
    ``algorithm`` over the ranks ``hosts`` (in ring order) by ``schedule``
    (``ring``, ``halving_doubling`` for a power of two ranks, or ``tree``: NCCL's
    double binary tree for ``all_reduce``, pipelined in chunks of at most
    ``chunk_size``), ``size`` bytes per rank (NCCL's message size), split into
    ``channels`` parallel rings (tree: pairs of trees), run ``iterations`` times,
    each rank starting its next iteration ``compute`` after its part of the
    previous one is done. Expanded to a ``tcp_flows`` list with dependencies
    when resolved (``transport: roce``: an ``rdma_flows`` list, one RDMA WRITE
    per transfer, ``roce`` replacing the scenario's RoCE settings, class 3
    unless given) (``docs/models/collectives.md``,
    :mod:`fabricsim.workloads.collectives`); the ``collectives`` table reports
    each iteration's time and bandwidths."""

    kind: Literal["collective"]
    algorithm: Annotated[CollectiveAlgorithm, one_of(CollectiveAlgorithm)] = "all_reduce"
    schedule: Annotated[CollectiveSchedule, one_of(CollectiveSchedule)] = "ring"
    hosts: NodeList
    size: Size
    channels: Count32 = 1
    chunk_size: Optional[Size] = None
    iterations: Count32 = 1
    compute: Time = 0
    start: Time = 0
    transport: Annotated[CollectiveTransport, one_of(CollectiveTransport)] = "tcp"
    roce: Optional[deferred(Roce)] = None

    @model_validator(mode="before")
    @classmethod
    def _roce_class(cls, data: Any) -> Any:
        """Over RoCE the class defaults to 3, the usual RoCE priority (as ``rdma_write``)."""
        if isinstance(data, dict) and data.get("transport") == "roce" and "class" not in data and "class_" not in data:
            return {**data, "class": 3}
        return data

    @model_validator(mode="after")
    def _ranks(self) -> "Collective":
        if self.transport == "roce" and self.tcp is not None:
            raise issues_error(("tcp", "applies to transport tcp; over roce give the RoCE settings in roce"))
        if self.transport == "tcp" and self.roce is not None:
            raise issues_error(("roce", "applies to transport roce (transport is tcp); give transport: roce"))
        n = len(self.hosts)
        if n < 2:
            raise issues_error(("hosts", "a collective needs at least two ranks"))
        seen: dict[str, int] = {}
        for i, h in enumerate(self.hosts):
            if h in seen:
                raise issues_error((f"hosts[{i}]", f"host {h!r} is already rank {seen[h]}"))
            seen[h] = i
        if self.schedule == "halving_doubling":
            if self.algorithm == "all_to_all":
                raise issues_error(("schedule", "halving_doubling applies to all_reduce, reduce_scatter and "
                                                "all_gather; all_to_all sends to every peer at once"))
            if n & (n - 1):
                raise issues_error(("hosts", f"halving_doubling needs a power of two ranks (got {n})"))
        if self.schedule == "tree" and self.algorithm != "all_reduce":
            allowed = "ring" if self.algorithm == "all_to_all" else "ring or halving_doubling"
            raise issues_error(("schedule", f"tree applies to all_reduce only; {self.algorithm} takes {allowed}"))
        if self.schedule != "tree" and self.chunk_size is not None:
            raise issues_error(("chunk_size", f"applies to schedule tree only (schedule is {self.schedule})"))
        if self.schedule == "tree":
            if self.size < 2 * self.channels:
                raise issues_error(
                    ("size", f"must be at least 2 x channels = {2 * self.channels} B (each of a channel's two trees "
                             f"carries size / channels / 2; got {self.size} B)")
                )
        elif self.size < n * self.channels:
            raise issues_error(
                ("size", f"must be at least ranks x channels = {n * self.channels} B (each flow carries size / ranks "
                         f"/ channels; got {self.size} B)")
            )
        per_iteration = self.flows_per_iteration()
        if self.schedule == "tree" and per_iteration > MAX_FLOWS:
            first = self.steps()
            raise issues_error(("chunk_size", f"{per_iteration:,} flows per iteration ({first:,} chunks per tree); "
                                              f"at most {MAX_FLOWS:,} in all: use larger chunks"))
        flows = per_iteration * self.iterations
        if flows > MAX_FLOWS:
            raise issues_error(("iterations", f"{flows:,} flows in all; at most {MAX_FLOWS:,}"))
        if self.algorithm == "all_to_all" and self.iterations > 1:
            # Every flow of a later iteration waits for all its rank's sends and receives of the one before.
            entries = (self.iterations - 1) * per_iteration * 2 * (n - 1) * self.channels
            if entries > MAX_DEPENDENCIES:
                raise issues_error(
                    ("iterations", f"{self.iterations} iterations of an all-to-all of {n} ranks make {entries:,} "
                                   f"dependencies (each flow of a later iteration waits for the {2 * (n - 1) * self.channels:,} "
                                   f"flows of its rank in the one before; about {entries * 40 / 2**30:.1f} GiB to "
                                   f"build); at most {MAX_DEPENDENCIES:,}: run one iteration per scenario, or fewer "
                                   "ranks or channels")
                )
        return self

    def steps(self) -> int:
        """Steps per iteration: of the ring, or log2(ranks) per halving or doubling
        phase (1 for all-to-all: every pair at once; for a tree, the chunks of its
        largest tree, each crossing every tree edge up and down)."""
        n = len(self.hosts)
        if self.schedule == "tree":
            largest_tree = _ceil(_ceil(self.size, self.channels), 2)  # tree 0 of channel 0
            return _ceil(largest_tree, self.tree_chunk)
        phase = n.bit_length() - 1 if self.schedule == "halving_doubling" else n - 1
        return {"all_reduce": 2 * phase, "reduce_scatter": phase, "all_gather": phase}.get(self.algorithm, 1)

    @property
    def tree_chunk(self) -> int:
        """The largest chunk of a tree: ``chunk_size``, or NCCL's 512 KiB."""
        return self.chunk_size if self.chunk_size is not None else TREE_CHUNK

    def tree_parts(self) -> list[tuple[int, int]]:
        """``schedule: tree``: per channel c and tree t (index 2c + t), the bytes the
        tree carries (size / channels / 2, exact integers) and its chunks (each at
        most ``chunk_size``)."""
        out = []
        for c in range(self.channels):
            per_channel = self.size // self.channels + (1 if c < self.size % self.channels else 0)
            for t in range(2):
                data = per_channel // 2 + (1 if t < per_channel % 2 else 0)
                out.append((data, _ceil(data, self.tree_chunk)))
        return out

    def flows_per_iteration(self) -> int:
        n = len(self.hosts)
        if self.schedule == "tree":
            # one flow per chunk, tree edge (n - 1 per tree) and direction (reduce up, broadcast down);
            # the channels carry size // channels or one byte more, counted per kind, not one by one
            q, r = divmod(self.size, self.channels)
            chunks = 0
            for per_channel, count in ((q + 1, r), (q, self.channels - r)):
                for t in range(2):
                    data = per_channel // 2 + (1 if t < per_channel % 2 else 0)
                    chunks += count * _ceil(data, self.tree_chunk)
            return 2 * (n - 1) * chunks
        per_step = n * (n - 1) if self.algorithm == "all_to_all" else n
        return per_step * self.steps() * self.channels


WorkloadPattern = Literal["all_to_all", "many_to_one", "permutation", "explicit"]
Sampling = Literal["linear", "step"]
LoadBasis = Literal["wire", "payload"]


class WorkloadPair(Model):
    """A (src, dst) pair of an explicit workload pattern."""

    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)


class Workload(_TcpTraffic):
    """TCP flows with sizes drawn from a CDF and Poisson arrivals at an offered
    ``load``; expanded to an explicit ``tcp_flows`` list when resolved (see
    ``docs/models/workloads.md`` and :mod:`fabricsim.workloads.flowgen`)."""

    kind: Literal["workload"]
    cdf: str = Field(min_length=1)
    sampling: Annotated[Sampling, one_of(Sampling)] = "linear"
    load: Optional[Load] = None
    load_scale: float = Field(default=1.0, gt=0)
    load_basis: Optional[Annotated[LoadBasis, one_of(LoadBasis)]] = None
    load_on: Optional[str] = Field(default=None, min_length=1)
    pattern: Annotated[WorkloadPattern, one_of(WorkloadPattern)] = "all_to_all"
    hosts: Optional[NodeList] = None
    requester: Optional[str] = Field(default=None, min_length=1)
    responders: Optional[NodeList] = None
    pairs: Optional[list[WorkloadPair]] = Field(default=None, min_length=1)
    start: Time = 0
    stop: Optional[Time] = None
    max_flows: Optional[int] = Field(default=None, ge=1, le=MAX_FLOWS)

    @model_validator(mode="after")
    def _pattern_fields(self) -> "Workload":
        if self.pattern == "many_to_one" and self.requester is None:
            raise issues_error(("requester", "required field is missing for pattern many_to_one"))
        if self.pattern == "explicit" and self.pairs is None:
            raise issues_error(("pairs", "required field is missing for pattern explicit"))
        if self.stop is not None and self.stop <= self.start:
            raise issues_error(("stop", f"must be later than start ({as_time(self.start)})"))
        return self


class RdmaWrite(KindModel):
    """RDMA writes over RoCEv2: ``qps`` queue pairs from each ``src`` to ``dst``,
    each writing ``messages`` messages of ``message_size``, at most ``window``
    outstanding (1 = closed loop). An entry's ``roce`` replaces the scenario's."""

    kind: Literal["rdma_write"]
    name: Optional[str] = Field(default=None, min_length=1)
    src: NodeList
    dst: str = Field(min_length=1)
    qps: Count32 = 1
    messages: Count32 = 1
    message_size: Size
    window: Count32 = 1
    start: Time = 0
    class_: int = Field(default=3, ge=0, le=7, alias="class")
    roce: Optional[deferred(Roce)] = None

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "src": list(self.src),
            "dst": self.dst,
            "qps": self.qps,
            "messages": self.messages,
            "message_bytes": self.message_size,
            "window": self.window,
            "start_ps": self.start,
            "class": self.class_,
            "roce": self.roce.to_resolved() if self.roce is not None else None,
        }


class RdmaFlows(KindModel):
    """An explicit list of RDMA WRITE transfers over RoCEv2, one queue pair and
    one message each (``src``, ``dst``, ``size``, ``start``), that may wait for
    others of the list (``after``, ``compute``, as in ``tcp_flows``). A transfer
    is complete when its responder has every byte (the receive completion of an
    RDMA WRITE with immediate, which NCCL over verbs waits for); those waiting
    for it start then. An entry's ``roce`` replaces the scenario's."""

    kind: Literal["rdma_flows"]
    name: Optional[str] = Field(default=None, min_length=1)
    flows: list[TcpFlowItem] = Field(min_length=1)
    class_: int = Field(default=3, ge=0, le=7, alias="class")
    roce: Optional[deferred(Roce)] = None
    _after: list[list[int]] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _dependencies(self) -> "RdmaFlows":
        self._after = resolve_after(self.flows)
        return self

    def to_resolved(self) -> dict[str, Any]:
        after = self._after if len(self._after) == len(self.flows) else resolve_after(self.flows)
        return {
            "kind": self.kind,
            "name": self.name,
            "flows": [f.to_resolved(a) for f, a in zip(self.flows, after)],
            "class": self.class_,
            "roce": self.roce.to_resolved() if self.roce is not None else None,
        }


class Iperf3(_TcpTraffic):
    """iperf3-like test: ``instances`` TCP streams from ``src`` to ``dst`` for
    ``duration``; instance ``i`` runs on core ``i mod cores`` at both ends
    (``pin``) when hosts have a CPU model. The ``iperf3`` table reports each
    stream's Gbps and data packets per second over ``[start + omit, start + duration]``."""

    kind: Literal["iperf3"]
    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)
    instances: int = Field(default=1, ge=1, le=U32_MAX)
    duration: Duration
    omit: Time = 0
    start: Time = 0
    pin: bool = True

    @model_validator(mode="after")
    def _omit(self) -> "Iperf3":
        if self.omit >= self.duration:
            raise issues_error(("omit", "must be shorter than the duration"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return self._resolved(
            self.kind,
            {
                "src": self.src,
                "dst": self.dst,
                "instances": self.instances,
                "duration_ps": self.duration,
                "omit_ps": self.omit,
                "start_ps": self.start,
                "pin": self.pin,
            },
        )


PingPongProtocol = Literal["udp", "tcp"]


class PingPong(KindModel):
    """sockperf-like ping-pong: ``src`` sends a ``message_size`` message to
    ``dst``, which answers at once; one message outstanding, for ``messages``
    messages or ``duration``. The ``ping_pong`` table reports one-way latency
    (half the round trip) percentiles. A UDP reply missing after ``timeout``
    counts the message lost. ``protocol: tcp`` runs netperf TCP_RR-like over
    one TCP connection (the scenario's ``tcp`` settings): each reply carries the
    ACK of its request; no message is lost, so ``timeout`` does not apply."""

    kind: Literal["ping_pong"]
    name: Optional[str] = Field(default=None, min_length=1)
    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)
    protocol: Annotated[PingPongProtocol, one_of(PingPongProtocol)] = "udp"
    message_size: Size32
    messages: Optional[int] = Field(default=None, ge=1, le=U64_MAX)
    duration: Optional[Duration] = None
    start: Time = 0
    timeout: Duration = 10**12
    gap: Time = 0
    core: int = Field(default=0, ge=0, le=U32_MAX)
    class_: int = Field(default=0, ge=0, le=7, alias="class")

    @model_validator(mode="after")
    def _count_or_duration(self) -> "PingPong":
        if self.messages is None and self.duration is None:
            raise issues_error(("messages", "give a number of messages (e.g. 10000) or a duration (e.g. 10ms)"))
        if self.protocol == "udp" and self.message_size > 9170:
            raise issues_error(("message_size", "a UDP message must be 1..9170 bytes (one datagram in a 9216 B "
                                                f"jumbo frame; got {self.message_size})"))
        return self

    def to_resolved(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "src": self.src,
            "dst": self.dst,
            "protocol": self.protocol,
            "message_bytes": self.message_size,
            "messages": self.messages,
            "duration_ps": self.duration,
            "start_ps": self.start,
            "timeout_ps": self.timeout,
            "gap_ps": self.gap,
            "core": self.core,
            "class": self.class_,
        }


TRAFFIC_MODELS = (UdpTraffic, Burst, TcpBulk, TcpIncast, TcpFlows, Workload, Collective, RdmaWrite, RdmaFlows, Iperf3,
                  PingPong)
#: A traffic entry: one of :data:`TRAFFIC_MODELS` by its ``kind``, each kind's validator built on first use.
Traffic = kinds(*TRAFFIC_MODELS)
