"""Shared settings of the Cisco Nexus 9000-like intelligent-buffer presets,
which differ only in the per-port maximum."""

from __future__ import annotations

from typing import Any


def summary(port_max: str) -> str:
    size = port_max.replace("MB", " MB")
    return f"intelligent buffer (DT + ETRAP/AFD/DPP), 40 MB of 416 B cells, {size} per port, AFD burst profile"


def switch(port_max: str) -> dict[str, Any]:
    """Switch settings with a per-port maximum of ``port_max`` (like ``5MB``)."""
    return {
        "latency": "1us",
        "buffer": {
            "model": "intelligent",
            "size": "40MB",
            "cell": "416B",
            "alpha": 1,
            "port_max": port_max,
            "etrap_age": "50us",
            "afd_period": "25us",
            "queue_desired": "150KB",
        },
    }
