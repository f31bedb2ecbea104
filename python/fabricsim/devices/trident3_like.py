"""Broadcom Trident 3-like shared-buffer switch (e.g. 32x100G)."""

NAME = "trident3-like"
SUMMARY = "shared buffer, 129,024 cells of 256 B (31.5 MB usable), one pool, +64 B/packet, alpha 8 (SONiC lossy), 800 ns"
SWITCH = {
    "latency": "800ns",
    "buffer": {
        "model": "shared",
        "size": "33030144B",
        "cell": "256B",
        "per_packet_overhead": "64B",
        "alpha": 8,
    },
    # 7050CX3-32S: "typical power consumption under 7 W per 100GbE port"; all of it per
    # port, 10% proportional to traffic (assumption, docs/models/power.md).
    "power": {"idle": "0W", "port": "6.3W", "per_bit": "7pJ", "per_packet": "0J"},
}
