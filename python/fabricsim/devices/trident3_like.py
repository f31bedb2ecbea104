"""Broadcom Trident 3-like shared-buffer switch (e.g. 32x100G).

Public facts: 129,024 usable cells of 256 B, 64 B MMU header per packet, one
XPE (OpenBCM ``_TD3_MMU_*``, ``_TD3_XPES_PER_DEV 1``); two packet-processing
pipes (``_TD3_PIPES_PER_DEV 2``); SONiC lossy egress ``dynamic_th 3``
(alpha 8); "latency from as low as 800 ns" and "wire speed L2 and L3
features" (Arista 7050X3 datasheet). Assumptions: features run in the one
pass of each pipe at no extra cost, and each pipe forwards its ports' line
rate at 64 B frames (16 x 100G: 2,380,952,381 packets/s), so the device is
feature-invariant; egress queues are FIFO (shares follow buffer admission).
"""

NAME = "trident3-like"
SUMMARY = (
    "shared buffer, 129,024 cells of 256 B (31.5 MB usable), one pool, +64 B/packet, alpha 8 (SONiC lossy), 800 ns; "
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
    },
    "pipeline": {"pipes": 2, "rate": "2380952381pps"},
    # 7050CX3-32S: "typical power consumption under 7 W per 100GbE port"; all of it per
    # port, 10% proportional to traffic (assumption, docs/models/power.md).
    "power": {"idle": "0W", "port": "6.3W", "per_bit": "7pJ", "per_packet": "0J"},
}
