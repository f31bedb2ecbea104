"""The Linux host datapath of the real-Linux lab: TCP over a veth pair, with
VXLAN and nftables connection tracking as optional stages.

Costs are the lab's CPU accounting (``docs/validation/linux-datapath.md``,
``fabricsim/validation/data/linux_datapath.json``, fits over the MTU sweep
with one iperf3 instance): CPU time per data packet, both ends together,
with its ACK's share folded in, as ``a + b x L`` with ``L`` the inner IP
packet length. Here the per-byte cost counts Ethernet frame bytes (IP + 18),
so the fixed part is ``a - 18 b``; each direction gets half (an assumption:
the lab measured both ends on one CPU), and ACKs cost nothing of their own
(their share is in the data packet's). TSO, GSO and GRO are off, as in the
lab; a veth has no interrupt and no DMA; received packets are processed on
the core of the flow's application (the veth's CPU, ``steering: none``).
"""

from __future__ import annotations

from typing import Any

NAME = "linux-veth"
SUMMARY = "Linux TCP/IP over veth as measured in the lab (per-packet and per-byte CPU costs; VXLAN, conntrack stages)"

#: Fits of the lab (ns per data packet, ns per inner IP byte), both ends together.
STACK = (1214.025539969828, 0.3419929385478168)
VXLAN = (1384.3895908809995, 0.006554207874238771)
#: Conntrack on the inner flows of the tunnel (vxlan+ct - vxlan), and on plain packets (veth+ct - veth).
CONNTRACK_VXLAN = (824.7462788561616, 0.3013575363291851)
CONNTRACK = (649.8081417176136, 0.02418606627312847)
#: Ethernet header and FCS: the model's per-byte costs count frame bytes.
L2_BYTES = 18


def half_cost(fit: tuple[float, float]) -> dict[str, Any]:
    """One direction's share of a both-ends fit, on frame bytes, ACKs folded in."""
    a, b = fit
    return {"per_packet": f"{(a - L2_BYTES * b) / 2:.4f}ns", "per_byte": f"{b / 2:.6f}ns", "per_ack": 0}


def stage(kind: str, fit: tuple[float, float], **fields: Any) -> dict[str, Any]:
    """A software stage costing half of ``fit`` in each direction it runs in."""
    cost = half_cost(fit)
    out: dict[str, Any] = {"kind": kind, **fields}
    direction = fields.get("direction", "both")
    if direction in ("tx", "both"):
        out["tx"] = cost
    if direction in ("rx", "both"):
        out["rx"] = cost
    return out


def vxlan_stages(vni: int = 42) -> list[dict[str, Any]]:
    """Kernel VXLAN: encapsulation on transmit, decapsulation on receive (the fit split between them)."""
    return [
        stage("vxlan_encap", VXLAN, name="vxlan_encap", vni=vni, direction="tx"),
        stage("vxlan_decap", VXLAN, name="vxlan_decap", direction="rx"),
    ]


def conntrack_stage(tunnel: bool, table_size: int = 1_048_576) -> dict[str, Any]:
    """nftables connection tracking of the inner flows (the cost measured with or without the tunnel)."""
    return stage("conntrack", CONNTRACK_VXLAN if tunnel else CONNTRACK, name="conntrack", table_size=table_size)


MODEL: dict[str, Any] = {
    "cores": 2,
    "rx_steering": "app",
    "backlog": 1000,
    "gso": 0,
    "gro": 0,
    "napi_budget": 64,
    "stages": [stage("tcp", STACK, name="tcp_ip_veth")],
}
