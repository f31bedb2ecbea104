"""Unloaded latency of one frame along a path, in closed form, and its breakdown.

Independent of the simulation core: it reads the resolved scenario (link
rates and delays, each device's forwarding mode, latency and cut-through
header) and adds up, hop by hop, what a frame of ``L`` bytes waits for on an
empty path (``docs/models/links-and-ports.md``):

- every link: its propagation delay;
- a **store-and-forward** stage (or a cut-through stage whose egress is faster
  than its ingress): the frame's serialization on the ingress link,
  ``ceil((L + overhead) * 8 * 10^12 / rate)`` ps, then the device latency;
- a **cut-through** stage: the serialization of the first ``min(header, L)``
  bytes on the ingress link, then the device latency;
- the last link: the frame's serialization, then the receiving host's latency.

The parts are reported separately (:class:`Breakdown`). With a host datapath
model (``network.host.model``), :func:`host_terms` adds the hosts' own parts
from the model's parameters alone (``docs/models/host.md``), in the order a
message meets them:

- send core (``stack_tx``): every software stage a datagram runs on transmit
  (``syscall`` once per message, ``udp``, ``driver`` and match-action stages per
  frame: ``per_packet + per_byte x frame bytes``), divided by the core's share
  and rounded up to the picosecond once for the batch, as the core serves it;
- NIC transmit DMA (``nic_tx``): ``ceil(frame x per_byte)`` then the fixed latency;
- the fabric (above), with the fixed ``network.host.latency`` (0 with a model);
- NIC receive DMA (``nic_rx``), the same way;
- interrupt wait (``irq_wait``): the coalescing timer ``usecs`` unless every
  frame interrupts (``usecs`` 0 or ``frames`` 1);
- receive core (``stack_rx``): the interrupt's cost plus every receive stage.

:func:`end_to_end` sums both. RFC 1242 device latencies between two tester
ports follow from the fabric's numbers alone: bit forwarding (FIFO, first bit
in to first bit out) and store-and-forward (LIFO, last bit in to first bit out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

__all__ = [
    "HOST_PARTS",
    "Breakdown",
    "Hop",
    "end_to_end",
    "host_terms",
    "path_hops",
    "path_nodes",
    "serialization_ps",
    "tester_terms",
    "unloaded_latency",
]

#: The host datapath's parts of an unloaded one-way latency, in a message's order, and the
#: ``host_latency`` component of the core each one is (the waits for a busy core are 0 unloaded).
HOST_PARTS = {
    "stack_tx_ps": "tx_cpu",
    "nic_tx_ps": "tx_dma",
    "nic_rx_ps": "rx_dma",
    "irq_wait_ps": "rx_irq_wait",
    "stack_rx_ps": "rx_cpu",
}


def serialization_ps(size: int, rate_bps: int) -> int:
    """Picoseconds to serialize ``size`` bytes at ``rate_bps``, rounded up (as the core does)."""
    return -(-size * 8 * 10**12 // rate_bps)


@dataclass(frozen=True)
class Hop:
    """A link of the path, and the device at its far end (``None`` for the destination host)."""

    src: str
    dst: str
    rate_bps: int
    delay_ps: int
    device: Mapping[str, Any] | None


@dataclass
class Breakdown:
    """Where an unloaded frame's one-way latency goes, in picoseconds, part by part.

    The parts are named ``<part>_ps`` and reported in this order (a host datapath
    model adds its own, e.g. NIC and stack parts, with :meth:`add`); the total is
    their sum."""

    parts: dict[str, int] = field(
        default_factory=lambda: {
            "propagation_ps": 0,
            "serialization_ps": 0,
            "header_ps": 0,
            "device_ps": 0,
            "host_ps": 0,
        }
    )
    #: Per device on the path: ``store_and_forward`` or ``cut_through`` as it actually forwarded the frame.
    modes: list[str] = field(default_factory=list)

    def add(self, part: str, ps: int) -> None:
        """Add ``ps`` picoseconds to ``part`` (created after the others if new)."""
        self.parts[part] = self.parts.get(part, 0) + ps

    @property
    def total_ps(self) -> int:
        return sum(self.parts.values())

    def as_dict(self) -> dict[str, int]:
        return {**self.parts, "total_ps": self.total_ps}


def _device(resolved: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    network = resolved["network"]
    return network.get("switch_overrides", {}).get(name) or network["switch"]


def path_nodes(links: Any, src: str, dst: str) -> list[str]:
    """The nodes a stream from ``src`` to ``dst`` went through, from a run's ``links``
    table (the link directions that carried its frames, the only traffic of the run)."""
    used = {(a, b) for a, b, n in zip(links["src"].to_list(), links["dst"].to_list(), links["packets"].to_list()) if n}
    nodes = [src]
    while nodes[-1] != dst:
        nxt = [b for a, b in used if a == nodes[-1] and b not in nodes]
        if len(nxt) != 1:
            raise ValueError(f"cannot follow the path from {src} to {dst} at {nodes[-1]} (next hops: {sorted(nxt)})")
        nodes.append(nxt[0])
    return nodes


def path_hops(resolved: Mapping[str, Any], links: Any, nodes: Sequence[str]) -> list[Hop]:
    """The hops along ``nodes``, with rates and delays from a run's ``links`` table and device settings
    from the resolved scenario."""
    rows = {(a, b): (r, d) for a, b, r, d in zip(links["src"].to_list(), links["dst"].to_list(),
                                                  links["rate_bps"].to_list(), links["delay_ps"].to_list())}
    hops = []
    for k in range(len(nodes) - 1):
        rate, delay = rows[(nodes[k], nodes[k + 1])]
        last = k == len(nodes) - 2
        hops.append(Hop(nodes[k], nodes[k + 1], int(rate), int(delay), None if last else _device(resolved, nodes[k + 1])))
    return hops


def unloaded_latency(resolved: Mapping[str, Any], hops: Sequence[Hop], frame: int) -> Breakdown:
    """One-way latency of a ``frame``-byte frame from its creation at the source host to its
    delivery (last bit in plus the host latency) at the destination, on an otherwise empty path."""
    overhead = int(resolved["network"].get("ethernet_overhead_bytes", 20))
    host_latency = int(resolved["network"]["host"]["latency_ps"])
    b = Breakdown()
    for k, hop in enumerate(hops):
        b.add("propagation_ps", hop.delay_ps)
        if hop.device is None:
            b.add("serialization_ps", serialization_ps(frame + overhead, hop.rate_bps))
            b.add("host_ps", host_latency)
            break
        dev = hop.device
        cut = dev.get("forwarding") == "cut_through" and hop.rate_bps >= hops[k + 1].rate_bps
        if cut:
            b.add("header_ps", serialization_ps(min(int(dev.get("cut_through_bytes", 64)), frame), hop.rate_bps))
        else:
            b.add("serialization_ps", serialization_ps(frame + overhead, hop.rate_bps))
        b.add("device_ps", int(dev["latency_ps"]))
        b.modes.append("cut_through" if cut else "store_and_forward")
    return b


def tester_terms(resolved: Mapping[str, Any], hops: Sequence[Hop], frame: int) -> tuple[int, int]:
    """What separates a one-way latency from the RFC 1242 latency of the devices between the two
    tester ports: ``(fifo, lifo)`` picoseconds to subtract. FIFO (first bit in to first bit out)
    removes the two cables, the last link's serialization and the receiving host; LIFO (last bit in
    to first bit out) also the first link's serialization."""
    overhead = int(resolved["network"].get("ethernet_overhead_bytes", 20))
    host_latency = int(resolved["network"]["host"]["latency_ps"])
    first, last = hops[0], hops[-1]
    fifo = first.delay_ps + last.delay_ps + serialization_ps(frame + overhead, last.rate_bps) + host_latency
    return fifo, fifo + serialization_ps(frame + overhead, first.rate_bps)


def _stage_fs(cost: Mapping[str, Any], frame: int, per_message: bool) -> tuple[int, int]:
    """A stage's (fixed, per-byte) femtoseconds for one frame (a system call counts no bytes)."""
    fixed = int(cost.get("per_packet_ps") or 0) * 1000
    return fixed, 0 if per_message else int(cost.get("per_byte_fs") or 0) * frame


def _cpu_ps(fs: int, share_ppm: int) -> int:
    """Service time of ``fs`` femtoseconds of work on a core with ``share_ppm`` of its time, rounded up."""
    return -(-fs * 1000 // share_ppm)


def dma_ps(nic: Mapping[str, Any], direction: str, frame: int, wire_bps: Optional[int] = None) -> int:
    """Picoseconds an unloaded ``frame`` spends in the NIC's ``direction`` (``tx`` or ``rx``) DMA
    line, as the core computes them: the transfer, or with ``cut_through_bytes`` its lead over a
    wire of ``wire_bps`` (``max(T(c), T(n) - W(n - c))``), plus the fixed latency."""
    per_byte = int(nic[f"{direction}_per_byte_fs"])
    chunk = int(nic.get("cut_through_bytes") or 0)

    def transfer(n: int) -> int:
        return -(-n * per_byte // 1000)

    if chunk and per_byte and wire_bps and chunk < frame:
        lead = max(transfer(chunk), transfer(frame) - serialization_ps(frame - chunk, wire_bps))
    else:
        lead = transfer(frame)
    return lead + int(nic[f"{direction}_latency_ps"])


def host_terms(
    model: Mapping[str, Any],
    frame: int,
    protocol: str = "udp",
    wire_bps: tuple[Optional[int], Optional[int]] = (None, None),
) -> tuple[dict[str, int], dict[str, float]]:
    """The host parts of an unloaded UDP message of one ``frame``-byte datagram (``protocol``
    ``tcp``: a TCP message in one ``frame``-byte segment, through the ``tcp`` stage instead of the
    ``udp`` one, as a ping-pong's segment that carries its ACK with it), from a resolved
    ``network.host.model``: ``(exact, detail)``. ``exact`` holds :data:`HOST_PARTS` in picoseconds
    as the core computes them; ``detail`` splits them further (system calls, per-message and
    per-byte stack work, driver, interrupt cost, DMA fixed and per byte), in picoseconds of the
    core's time (before the whole is rounded up), for plots. ``wire_bps`` gives the sending and
    the receiving host's link rates, which a cut-through NIC's DMA overlaps."""
    share = int(model.get("core_share_ppm", 1_000_000))
    exact: dict[str, int] = {}
    detail: dict[str, float] = {}
    for d, name in (("tx", "stack_tx"), ("rx", "stack_rx")):
        parts = {"syscall": 0, "stack_fixed": 0, "stack_bytes": 0, "driver": 0}
        for stage in model.get("stages", []):
            kind = stage["kind"]
            if kind in ("tcp", "udp") and kind != protocol:  # a datagram never runs the TCP stack, nor a segment the UDP one
                continue
            fixed, per_byte = _stage_fs(stage.get(d) or {}, frame, kind == "syscall")
            if kind == "syscall":
                parts["syscall"] += fixed
            elif kind == "driver":
                parts["driver"] += fixed + per_byte
            else:  # udp or tcp, and match-action stages run in software
                parts["stack_fixed"] += fixed
                parts["stack_bytes"] += per_byte
        if d == "rx":
            parts["irq_cost"] = int(model["interrupt"]["cost_ps"]) * 1000
        exact[f"{name}_ps"] = _cpu_ps(sum(parts.values()), share)
        for k, fs in parts.items():
            detail[f"{name}_{k}_ps"] = fs * 1000 / share
    nic = model["nic"]
    for (d, name), wire in zip((("tx", "nic_tx"), ("rx", "nic_rx")), wire_bps):
        exact[f"{name}_ps"] = dma_ps(nic, d, frame, wire)
        detail[f"{name}_fixed_ps"] = float(nic[f"{d}_latency_ps"])
        detail[f"{name}_bytes_ps"] = float(exact[f"{name}_ps"] - int(nic[f"{d}_latency_ps"]))
    irq = model["interrupt"]
    immediate = int(irq["usecs_ps"]) == 0 or int(irq["frames"]) == 1
    exact["irq_wait_ps"] = 0 if immediate else int(irq["usecs_ps"])
    detail["irq_wait_ps"] = float(exact["irq_wait_ps"])
    return {k: exact[k] for k in HOST_PARTS}, detail


def end_to_end(resolved: Mapping[str, Any], hops: Sequence[Hop], frame: int, protocol: str = "udp") -> Breakdown:
    """One-way latency of an unloaded UDP message in one ``frame``-byte datagram (or TCP message in
    one segment, ``protocol="tcp"``) from the sending application to the receiving one: the
    fabric's parts (:func:`unloaded_latency`) and, when the hosts have a datapath model, its parts
    (:func:`host_terms`) at both ends. For TCP this holds for a ping-pong whose replies carry the
    ACKs of the requests (every message after the first): no pure ACK shares a core or a link."""
    b = unloaded_latency(resolved, hops, frame)
    model = resolved["network"]["host"].get("model")
    if model:
        exact, _ = host_terms(model, frame, protocol, (hops[0].rate_bps, hops[-1].rate_bps))
        for part, ps in exact.items():
            b.add(part, ps)
    return b
