"""A kernel-bypass stack (user-space TCP/UDP with busy polling, as with
libvma, Onload or a DPDK stack) on the same 100G NIC: no interrupts and no
system calls; the application polls its receive ring; small per-packet costs.

Every figure is a stated assumption (see ``docs/models/host.md``).
"""

from __future__ import annotations

from typing import Any

from fabricsim.hosts import linux_kernel

NAME = "kernel-bypass"
SUMMARY = "user-space TCP/UDP with busy polling: no interrupts, no system calls, ~100-200 ns per packet"

MODEL: dict[str, Any] = {
    "cores": 16,
    "rx_steering": "app",
    "backlog": 1024,
    "gso": 0,
    "gro": 0,
    "napi_budget": 32,
    "interrupt": {"usecs": 0, "frames": 0, "cost": 0},
    "nic": dict(linux_kernel.MODEL["nic"]),
    "stages": [
        {"kind": "tcp", "name": "tcp_user", "tx": {"per_packet": "150ns", "per_byte": "0.05ns"},
         "rx": {"per_packet": "200ns", "per_byte": "0.05ns"}},
        {"kind": "udp", "name": "udp_user", "tx": {"per_packet": "100ns", "per_byte": "0.05ns"},
         "rx": {"per_packet": "150ns", "per_byte": "0.05ns"}},
    ],
}
