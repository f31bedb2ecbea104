"""Broadcom Jericho-like deep-buffer VOQ switch (Arista 7280R/7500R-like)."""

NAME = "jericho-deep"
SUMMARY = "VOQ, 4 GB buffer, 5 ms of port rate per VOQ, round-robin egress, 2 us (assumed)"
SWITCH = {
    "latency": "2us",
    "buffer": {"model": "voq", "size": "4GB", "voq_limit": "5ms"},
}
