"""A Linux server with a 100G NIC: the kernel TCP and UDP stacks with TSO,
GSO and GRO, NAPI polls of 64 frames, interrupts per frame (moderation off,
as for latency tests) and PCIe Gen3 x16 DMA.

The stack's per-packet and per-byte costs are the lab's measured TCP/IP
costs (``linux-veth``, CPU accounting over an MTU sweep); the driver,
interrupt, system-call and DMA figures are stated assumptions (see
``docs/models/host.md``). Costs are per skb above the driver: with TSO and
GRO a 64 KB batch pays the stack's fixed cost once.
"""

from __future__ import annotations

from typing import Any

from fabricsim.hosts import linux_veth

NAME = "linux-kernel"
SUMMARY = "Linux kernel TCP/UDP on a 100G NIC: TSO/GSO/GRO 64 KB, NAPI, per-frame interrupts, PCIe Gen3 x16 DMA"

_STACK = linux_veth.half_cost(linux_veth.STACK)
#: Pure ACKs are skbs of their own with TSO/GRO; assumption: a third of a data skb's fixed cost.
_ACK = f"{(linux_veth.STACK[0] - linux_veth.L2_BYTES * linux_veth.STACK[1]) / 6:.4f}ns"
#: PCIe Gen3 x16: 8 GT/s x 16 lanes x 128/130 = 126.0 Gb/s; 256 B TLP payloads with
#: 24 B of TLP header leave 115.2 Gb/s of data: 69.4 ps per byte.
PCIE_PER_BYTE = "0.0694ns"

MODEL: dict[str, Any] = {
    "cores": 16,
    "rx_steering": "rss",
    "backlog": 1024,
    "gso": "64KiB",
    "tso": True,
    "gro": "64KiB",
    "napi_budget": 64,
    "interrupt": {"usecs": 0, "frames": 0, "cost": "1us"},
    "nic": {"tx_latency": "1us", "tx_per_byte": PCIE_PER_BYTE, "rx_latency": "500ns", "rx_per_byte": PCIE_PER_BYTE},
    "stages": [
        {"kind": "syscall", "name": "syscall", "tx": {"per_packet": "500ns"}, "rx": {"per_packet": "1us"}},
        {"kind": "tcp", "name": "tcp_ip", "tx": {**_STACK, "per_ack": _ACK}, "rx": {**_STACK, "per_ack": _ACK}},
        {"kind": "udp", "name": "udp_ip", "tx": {k: v for k, v in _STACK.items() if k != "per_ack"},
         "rx": {k: v for k, v in _STACK.items() if k != "per_ack"}},
        {"kind": "driver", "name": "driver", "tx": {"per_packet": "150ns"}, "rx": {"per_packet": "250ns"}},
    ],
}
