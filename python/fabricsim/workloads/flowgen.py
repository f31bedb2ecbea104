"""Expansion of ``kind: workload`` traffic entries into explicit TCP flow lists.

A workload entry draws flow sizes from a CDF (:mod:`fabricsim.workloads.cdf`) and
start times from a Poisson process, and becomes a core ``tcp_flows`` entry when
the scenario is resolved. The draws come from a numpy ``Generator(PCG64)``
seeded from ``(scenario seed, entry index)``, so the expansion is a pure
function of the scenario.

Offered load: flows arrive at rate ``lambda = load * R / (8 * mean_size)``
(mean inter-arrival ``8 * mean_size / (load * R)``), where ``mean_size`` is the
mean of the CDF under the chosen sampling method and ``R`` is

- the access-link rate of the host named by ``load_on``, or
- with ``load_on: sources`` (default except for ``many_to_one``), the sum of
  the access-link rates of the sending hosts: every sender offers ``load`` of
  its own link (senders are picked in proportion to their link rates).

``many_to_one`` calibrates on the requester's link by default.

``load_basis`` says what the load counts. ``wire`` (default): bytes on the
wire, as a link's utilization counts them: ``mean_size`` is the mean wire
bytes a flow sends towards its destination, its SYN and every data frame with
the TCP/IP and Ethernet headers, preamble and inter-frame gap
(``mean_bytes + E[segments] x (header + l2_header + ethernet_overhead) + SYN``).
``payload``: application bytes only; the headers then add about 6 % on the
wire (90 B per 1448 B segment), so ``load: 95%`` offers about 101 % of the link.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence

import math

import numpy as np

from fabricsim.errors import ScenarioError
from fabricsim.workloads.cdf import CdfError, load_cdf

__all__ = ["flow_wire_bytes", "generate", "generator", "host_rates", "plan"]


class Scenario(Protocol):
    """What the generator reads of a validated scenario (a :class:`fabricsim.schema.Scenario`)."""

    seed: int
    duration: int
    load: Optional[float]
    load_basis: str
    topology: Any
    traffic: Sequence[Any]
    tcp: Any
    network: Any

    @property
    def source(self) -> Optional[str]: ...

_STREAM_SALT = 0x666C6F77  # "flow": keeps these draws apart from any other use of the seed
_CHUNK = 4096
DEFAULT_MAX_FLOWS = 1_000_000
"""Flows a workload entry may generate when it sets no ``max_flows`` (docs/scenarios.md, "Limits")."""


def host_rates(topology: Any) -> dict[str, int]:
    """Host name -> access-link rate (bit/s), in node order, from a topology spec."""
    kind = topology.kind
    if kind == "star":
        return {f"h{i}": topology.link.rate for i in range(topology.hosts)}
    if kind == "dumbbell":
        rate = topology.edge_link.rate
        return {**{f"left{i}": rate for i in range(topology.left)}, **{f"right{i}": rate for i in range(topology.right)}}
    if kind == "leaf_spine":
        counts = topology.hosts_per_leaf
        total = sum(counts) if isinstance(counts, list) else counts * topology.leaves
        return {f"h{i}": topology.host_link.rate for i in range(total)}
    if kind == "fat_tree":
        return {f"h{i}": topology.link.rate for i in range(topology.k**3 // 4)}
    if kind == "rail":
        return {h: topology.nic_link.rate for h in topology.hosts()}
    if kind == "explicit":
        hosts = [node.name for node in topology.nodes if node.kind == "host"]
        rates: dict[str, int] = {}
        for link in topology.links:
            for end in (link.a, link.b):
                rates[end] = max(rates.get(end, 0), link.rate)
        return {h: rates.get(h, 0) for h in hosts}
    raise ValueError(f"unknown topology kind {kind!r}")


def _frame_overhead(tcp: Any, ethernet_overhead: int) -> tuple[int, int, int]:
    """(payload bytes per segment, wire bytes a data frame adds to its payload, wire bytes of a SYN)."""
    mss = tcp.mtu - tcp.header
    per_frame = tcp.header + tcp.l2_header + ethernet_overhead
    syn = max(tcp.header + tcp.l2_header, tcp.min_frame) + ethernet_overhead
    return mss, per_frame, syn


def flow_wire_bytes(sizes: Any, tcp: Any, ethernet_overhead: int) -> Any:
    """Wire bytes a TCP flow of ``sizes`` application bytes sends towards its
    destination: SYN and data frames with headers, preamble and gap (numpy array in, out)."""
    mss, per_frame, syn = _frame_overhead(tcp, ethernet_overhead)
    sizes = np.asarray(sizes, dtype=np.float64)
    segments = np.maximum(np.ceil(sizes / mss), 1)
    return sizes + segments * per_frame + syn


def generator(seed: int, index: int) -> np.random.Generator:
    """The random stream of traffic entry ``index`` of a scenario with ``seed``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), _STREAM_SALT, int(index)])))


def _fail(path: str, message: str, scenario: Scenario) -> ScenarioError:
    return ScenarioError([(path, message)], scenario.source)


def _known(names: list[str], hosts: dict[str, int], path: str, scenario: Scenario) -> None:
    for i, name in enumerate(names):
        if name not in hosts:
            shown = list(hosts)
            listing = ", ".join(shown[:6]) + (", ..." if len(shown) > 6 else "")
            raise _fail(f"{path}[{i}]" if len(names) > 1 else path, f"unknown host {name!r} (hosts: {listing})", scenario)


def plan(scenario: Scenario, index: int) -> dict[str, Any]:
    """The resolved parameters of workload entry ``index``: senders, pairs, rate, window."""
    entry = scenario.traffic[index]
    base = f"traffic[{index}]"
    hosts = host_rates(scenario.topology)
    try:
        cdf = load_cdf(entry.cdf)
    except (CdfError, OSError) as exc:
        raise _fail(f"{base}.cdf", str(exc), scenario) from None
    mean = cdf.mean(entry.sampling)
    basis = entry.load_basis or scenario.load_basis
    tcp = entry.tcp if entry.tcp is not None else scenario.tcp
    mss, per_frame, syn = _frame_overhead(tcp, scenario.network.ethernet_overhead)
    mean_wire = mean + cdf.mean_segments(mss, entry.sampling) * per_frame + syn
    counted = mean_wire if basis == "wire" else mean

    load = entry.load if entry.load is not None else scenario.load
    if load is None:
        raise _fail(f"{base}.load", "required: set it here or as the scenario's top-level load", scenario)
    load *= entry.load_scale

    pattern = entry.pattern
    if pattern in ("all_to_all", "permutation"):
        members = list(entry.hosts) if entry.hosts else list(hosts)
        _known(members, hosts, f"{base}.hosts", scenario)
        if len(set(members)) < 2:
            raise _fail(f"{base}.hosts", "needs at least two distinct hosts", scenario)
        members = list(dict.fromkeys(members))
        senders = members
    elif pattern == "many_to_one":
        if not entry.requester:
            raise _fail(f"{base}.requester", "required for pattern many_to_one", scenario)
        _known([entry.requester], hosts, f"{base}.requester", scenario)
        responders = list(entry.responders) if entry.responders else [h for h in hosts if h != entry.requester]
        _known(responders, hosts, f"{base}.responders", scenario)
        responders = [h for h in dict.fromkeys(responders) if h != entry.requester]
        if not responders:
            raise _fail(f"{base}.responders", "needs at least one host other than the requester", scenario)
        members = responders
        senders = responders
    else:  # explicit
        if not entry.pairs:
            raise _fail(f"{base}.pairs", "required for pattern explicit", scenario)
        for i, pair in enumerate(entry.pairs):
            _known([pair.src], hosts, f"{base}.pairs[{i}].src", scenario)
            _known([pair.dst], hosts, f"{base}.pairs[{i}].dst", scenario)
            if pair.src == pair.dst:
                raise _fail(f"{base}.pairs[{i}]", "src and dst must differ", scenario)
        members = []
        senders = [pair.src for pair in entry.pairs]

    load_on = entry.load_on or ("requester" if pattern == "many_to_one" else "sources")
    if load_on == "requester":
        if pattern != "many_to_one":
            raise _fail(f"{base}.load_on", "'requester' only applies to pattern many_to_one", scenario)
        calibration = hosts[entry.requester]
    elif load_on == "sources":
        calibration = sum(hosts[s] for s in senders)
    else:
        _known([load_on], hosts, f"{base}.load_on", scenario)
        calibration = hosts[load_on]
    if calibration <= 0:
        raise _fail(f"{base}.load_on", "the calibration link has no rate", scenario)

    stop = entry.stop if entry.stop is not None else scenario.duration
    if stop <= entry.start:
        raise _fail(f"{base}.stop", "must be later than start (the arrivals window is empty)", scenario)
    weights = np.asarray([hosts[s] for s in senders], dtype=np.float64)
    return {
        "cdf": cdf,
        "mean_bytes": mean,
        "mean_wire_bytes": mean_wire,
        "load_basis": basis,
        "load_on": load_on,
        "load": load,
        "rate_bps": calibration,
        "arrival_rate_per_s": load * calibration / (8.0 * counted),
        "pattern": pattern,
        "members": members,
        "senders": senders,
        "weights": weights / weights.sum(),
        "uniform": bool(np.all(weights == weights[0])),
        "start_ps": entry.start,
        "stop_ps": stop,
    }


def _sattolo(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random cyclic permutation of ``range(n)`` (no fixed points)."""
    perm = np.arange(n)
    for i in range(n - 1, 0, -1):
        j = int(rng.integers(0, i))
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _too_many(index: int, limit: int, scenario: Scenario, expected: Optional[float] = None) -> ScenarioError:
    entry = scenario.traffic[index]
    what = f"about {expected:.3g}" if expected is not None else f"more than {limit:,}"
    return _fail(
        f"traffic[{index}].max_flows",
        f"the workload would generate {what} flows; at most {limit:,} "
        f"({'max_flows' if entry.max_flows is not None else 'the default when max_flows is not set'}): "
        "lower the load or load_scale, shorten the arrivals window, or raise max_flows",
        scenario,
    )


def generate(scenario: Scenario, index: int) -> list[dict[str, Any]]:
    """The flows of workload entry ``index``: ``[{src, dst, bytes, start_ps}]`` sorted by start.

    At most ``max_flows`` (default :data:`DEFAULT_MAX_FLOWS`): a workload whose
    expected number of flows is far above it fails before drawing any.
    """
    entry = scenario.traffic[index]
    p = plan(scenario, index)
    rng = generator(scenario.seed, index)
    cdf = p["cdf"]
    senders = p["senders"]
    members = p["members"]
    position = {name: i for i, name in enumerate(members)}
    perm = _sattolo(rng, len(members)) if p["pattern"] == "permutation" else None
    start, stop = float(p["start_ps"]), p["stop_ps"]
    limit = entry.max_flows if entry.max_flows is not None else DEFAULT_MAX_FLOWS
    rate = p["arrival_rate_per_s"]
    expected = rate * (stop - start) / 1e12
    if not expected < 2 * limit + 100:  # NaN included; the exact count is checked while drawing
        raise _too_many(index, limit, scenario, expected)
    mean_gap_ps = 1e12 / float(rate) if rate > 0 else math.inf
    if not math.isfinite(mean_gap_ps):
        return []  # no arrival before the end of time: an empty workload

    flows: list[dict[str, Any]] = []
    clock = start
    done = False
    while not done:
        gaps = rng.exponential(mean_gap_ps, _CHUNK)
        u_size = rng.random(_CHUNK)
        u_src = rng.random(_CHUNK)
        u_dst = rng.random(_CHUNK)
        times = clock + np.cumsum(gaps)
        clock = float(times[-1])
        sizes = cdf.sizes_at(u_size, entry.sampling)
        if p["uniform"]:
            src_index = np.minimum((u_src * len(senders)).astype(np.int64), len(senders) - 1)
        else:
            src_index = np.minimum(np.searchsorted(np.cumsum(p["weights"]), u_src, side="right"), len(senders) - 1)
        # Start times in ps, compared with the window end as floats: only those
        # inside it (far below 2**63) are converted to integers.
        rounded = np.rint(times)
        inside = int(np.searchsorted(rounded, float(stop), side="left"))
        done = inside < _CHUNK
        starts = rounded[:inside].astype(np.int64)
        chosen = src_index[:inside]
        src_names = [senders[i] for i in chosen.tolist()]
        if p["pattern"] == "many_to_one":
            dst_names = [entry.requester] * inside
        elif p["pattern"] == "explicit":
            dst_names = [entry.pairs[i].dst for i in chosen.tolist()]
        else:
            src_position = np.fromiter((position[name] for name in src_names), dtype=np.int64, count=inside)
            if perm is not None:
                dst_position = perm[src_position]
            else:  # any member but the source, uniformly
                others = len(members) - 1
                dst_position = np.minimum((u_dst[:inside] * others).astype(np.int64), others - 1)
                dst_position += dst_position >= src_position
            dst_names = [members[i] for i in dst_position.tolist()]
        flows.extend(
            {"src": src, "dst": dst, "bytes": size, "start_ps": at}
            for src, dst, size, at in zip(src_names, dst_names, sizes[:inside].astype(np.int64).tolist(), starts.tolist())
        )
        if len(flows) > limit:
            raise _too_many(index, limit, scenario)
    return flows
