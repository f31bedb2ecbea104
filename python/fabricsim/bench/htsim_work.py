"""The work the htsim pairs share: a seeded permutation of hosts and htsim's connection matrix of it."""

from __future__ import annotations

import random
from typing import Sequence

__all__ = ["connection_matrix", "permutation"]


def permutation(hosts: int, seed: int) -> list[int]:
    """A seeded permutation of ``range(hosts)`` in which no host is its own partner."""
    rng = random.Random(seed)
    partner = list(range(hosts))
    while True:
        rng.shuffle(partner)
        if all(i != d for i, d in enumerate(partner)):
            return partner


def connection_matrix(partner: Sequence[int], size: int) -> str:
    """``partner`` as htsim's connection matrix: one flow of ``size`` bytes per host, all at t=0."""
    lines = [f"Nodes {len(partner)}", f"Connections {len(partner)}"]
    lines += [f"{i}->{d} id {i + 1} start 0 size {size}" for i, d in enumerate(partner)]
    return "\n".join(lines) + "\n"
