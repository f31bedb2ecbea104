"""Broadcom Tomahawk-like switch, approximated by one XPE slice.

Tomahawk splits its 16 MB into 4 XPE slices of 20,165 cells of 208 B; one
egress port can use only its slice. This preset models the buffer a hot egress
port sees: one slice (4,194,320 B) shared by all ports of the device.
"""

NAME = "tomahawk-like"
SUMMARY = "shared buffer, one 4 MB XPE slice of 20,165 cells of 208 B (of 16 MB), alpha 8, 450 ns"
SWITCH = {
    "latency": "450ns",
    "buffer": {"model": "shared", "size": "4194320B", "cell": "208B", "alpha": 8},
}
