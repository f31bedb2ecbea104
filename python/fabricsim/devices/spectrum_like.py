"""Mellanox Spectrum-like switch: one 16 MB shared pool."""

NAME = "spectrum-like"
SUMMARY = "shared buffer, 16 MB single pool, 256 B cells (assumed), alpha 2, 300 ns"
SWITCH = {
    "latency": "300ns",
    "buffer": {"model": "shared", "size": "16MB", "cell": "256B", "alpha": 2},
}
