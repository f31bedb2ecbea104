"""Switch-free broadcast fabric with its own adapters (an optical all-to-all broadcast, LightFleet-like)."""

NAME = "optical-broadcast"
SUMMARY = (
    "broadcast fabric: every adapter hears every other, receivers filter; native multicast; "
    "300 ns adapter to adapter (assumed), 14 B header, 256 KB receive buffer per adapter (assumed)"
)
# Facts (lightfleet.com FAQ on its Direct Broadcast Optical Interconnect): simultaneous
# all-to-all broadcast, every node sees all data, non-blocking, latency does not grow with
# the number of nodes, fewer switches and lower power than switched networks.
# Assumptions (no public figures found; docs/models/broadcast-fabric.md): 300 ns from the
# sending adapter's first bit in to the receiving adapter's first bit out, 14 B (Ethernet
# header) before a receiver can filter, 256 KB receive buffer per adapter, no link-level flow
# control (overflow is lost), 9216 B MTU, and the power figures below.
SWITCH = {
    "kind": "broadcast",
    "forwarding": "cut_through",
    "cut_through_header": "14B",
    "latency": "300ns",
    "mtu": "9216B",
    "buffer": {"model": "static", "port_size": "256KB"},
    "power": {"idle": "10W", "port": "3W", "per_bit": "10pJ", "per_packet": "0J"},
}
