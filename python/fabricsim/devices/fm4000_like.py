"""Ultra-low-latency 24x10G cut-through switch on an Intel/Fulcrum FM4000-class chip (e.g. Arista 7124SX)."""

NAME = "fm4000-like"
SUMMARY = (
    "10G cut-through, 500 ns first bit in to first bit out at 10G with a 64 B header, "
    "1.718 MB shared buffer, 9216 B MTU, 5 W/port typical"
)
# Facts: 7124SX data sheet: 500 ns latency (L2 and L3, unicast and multicast), 24 x 10GbE,
# wire speed, "typical power consumption 5W/port"; FM4000 chip with 2 MB of packet memory,
# 1.238 MB dynamic pool + 0.02 MB per port (people.ucsc.edu/~warner/Bufs/arista_7124SX).
# Derived: latency = 500 ns - 64 B at 10 Gb/s (51.2 ns), so that the RFC 1242 bit-forwarding
# latency at 10G is the data sheet's 500 ns. Buffer = 1.238 MB + 24 x 20 KB.
# Assumptions (docs/models/devices.md, docs/models/power.md): 64 B header, 256 B cells,
# alpha 1, 9216 B MTU; all typical power per port, 10% of it proportional to traffic.
SWITCH = {
    "forwarding": "cut_through",
    "cut_through_header": "64B",
    "latency": "448.8ns",
    "mtu": "9216B",
    "buffer": {"model": "shared", "size": "1718000B", "cell": "256B", "alpha": 1},
    "power": {"idle": "0W", "port": "4.5W", "per_bit": "50pJ", "per_packet": "0J"},
}
