"""Cisco Nexus 9000-like intelligent buffer, 10 MB per-port maximum."""

NAME = "nexus-ib-10mb"
SUMMARY = "intelligent buffer (DT + ETRAP/AFD/DPP), 40 MB of 416 B cells, 10 MB per port, AFD burst profile"
SWITCH = {
    "latency": "1us",
    "buffer": {
        "model": "intelligent",
        "size": "40MB",
        "cell": "416B",
        "alpha": 1,
        "port_max": "10MB",
        "etrap_age": "50us",
        "afd_period": "25us",
        "queue_desired": "150KB",
    },
}
