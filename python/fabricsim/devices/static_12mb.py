"""A 12 MB buffer statically split among 32 ports (no sharing)."""

NAME = "static-12mb"
SUMMARY = "static drop-tail, 12 MB split evenly over 32 ports: 375 KB per port, 500 ns"
SWITCH = {
    "latency": "500ns",
    "buffer": {"model": "static", "port_size": "375KB"},
}
