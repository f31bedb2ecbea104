"""Broadcom Trident 3-like shared-buffer switch (e.g. 32x100G).

Public facts: 129,024 usable cells of 256 B, 64 B MMU header per packet, one
XPE (OpenBCM ``_TD3_MMU_*``, ``_TD3_XPES_PER_DEV 1``); two packet-processing
pipes (``_TD3_PIPES_PER_DEV 2``); SONiC lossy egress ``dynamic_th 3``
(alpha 8); "latency from as low as 800 ns" and "wire speed L2 and L3
features" (Arista 7050X3 datasheet). Assumptions: features run in the one
pass of each pipe at no extra cost, and each pipe forwards its ports' line
rate at 64 B frames (16 x 100G: 2,380,952,381 packets/s), so the device is
feature-invariant; egress queues are FIFO (shares follow buffer admission).

The reservations are the SDK's default MMU settings (OpenBCM sdk-6.5.21,
``src/soc/esw/trident3.c``: ``_soc_td3_mmu_sw_info_config``,
``_soc_td3_default_pg_headroom``, ``_soc_td3_mmu_config_buf_phase1/2``), in
256 B cells; docs/models/devices.md has the derivation:

- every priority maps to priority group 7 (one PG per port), with an 8-cell
  PG minimum (``mmu_pg_min``);
- PG 7 headroom per port by speed, line-rate ports: 160 cells up to 10G, 197
  up to 20G, 254 at 25G, 274 at 40G, 351 at 50G, 574 at 100G;
- fixed: the global headroom (2 maximum packets = 76 cells), the CPU port's
  headroom (77) and the two loopback ports' (2 x 150), PG minimums of the CPU,
  loopback and management ports (4 x 8) and the replication queues' minimums
  (11 x 8): 573 cells.

A 30-port 100G switch thus sets aside 30 x (574 + 8) + 573 = 18,033 cells
(4.40 MiB) of its 129,024.
"""

_CELL = 256


def _cells(n: int) -> str:
    return f"{n * _CELL}B"


NAME = "trident3-like"
SUMMARY = (
    "shared buffer, 129,024 cells of 256 B (31.5 MB usable), one pool, +64 B/packet, alpha 8 (SONiC lossy), "
    "SDK reservations (PG min 8 cells, 574 cells headroom per 100G port, 573 fixed), 800 ns; "
    "2 pipes at 64 B line rate, features in one pass"
)
SWITCH = {
    "latency": "800ns",
    "buffer": {
        "model": "shared",
        "size": "33030144B",
        "cell": "256B",
        "per_packet_overhead": "64B",
        "alpha": 8,
        "class_pg": 7,
        "pg_min": _cells(8),
        "headroom_per_port": {
            "10Gbps": _cells(160),
            "20Gbps": _cells(197),
            "25Gbps": _cells(254),
            "42Gbps": _cells(274),
            "50Gbps": _cells(351),
            "100Gbps": _cells(574),
        },
        "reserved_fixed": _cells(76 + 77 + 2 * 150 + 4 * 8 + 11 * 8),
    },
    "pipeline": {"pipes": 2, "rate": "2380952381pps"},
    # 7050CX3-32S: "typical power consumption under 7 W per 100GbE port"; all of it per
    # port, 10% proportional to traffic (assumption, docs/models/power.md).
    "power": {"idle": "0W", "port": "6.3W", "per_bit": "7pJ", "per_packet": "0J"},
}
