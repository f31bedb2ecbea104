"""``fabricsim bench --htsim DIR --pair spray-k8``: packet spraying in fabricsim and in htsim, same fabric, same flows.

The work: a k=8 fat-tree (128 hosts, 100G links of 1 us, no switch latency, ports of 50 frames of 4,160 B =
208,000 B), every host sending one 2 MB flow at t=0 to its partner in a seeded permutation with no fixed point
(the permutation of the ``fattree-k8`` timing pair, written as htsim's connection matrix). Frames are 4,096 B
of payload and a 64 B header on both sides, with no preamble or inter-frame gap.

The transports differ, and are named in every row:

- htsim's EQDS (``htsim_eqds``) and NDP (``htsim_ndp``) are receiver-pulled: the sender starts with a window of
  50 frames, the receiver paces pulls at 99 % of its link, and a switch queue that is full trims a packet to
  its header (sent on at high priority) instead of dropping it, so a loss is known at once. EQDS sprays by
  path entropy hashed at every switch (``-strat ecmp_host``): ``-paths 4096`` gives every packet of a flow a
  distinct entropy (independent choices, as fabricsim's ``spray_random``), EQDS's default ``-paths 64``
  cycles a flow over 64 entropies (an uneven split of 64 hashes over 16 paths). NDP sprays at the source
  over the 16 paths: at random (``-strat rand``) or through a permutation of them in turn (``-strat perm``,
  the counterpart of ``spray_rr``).
- fabricsim runs RoCEv2 queue pairs at line rate (DCQCN off) with selective repeat (``recovery:
  selective_repeat``, ``dupthresh: 64``: a packet is resent only once 64 later ones are held, so that
  reordering by spraying is not taken for loss; EQDS and NDP resend only what was trimmed or timed out),
  an ACK per packet in the strict-priority class, a 250 us timeout (EQDS's minimum RTO here is 249.84 us)
  and a drop-tail port of the same size. The switches spray (``spray_random``, ``spray_rr``) or hash flows
  (``ecmp``, for reference). The ``+ trimming`` rows trim as htsim's queues do (``network.switch.trimming``):
  a data packet that finds its class's 50 frames full is cut to its 64 B header, which goes on in the
  highest class with room of its own (the port holds 50 more frames' bytes for the other classes), and the
  receiver NACKs that PSN at once.

The closed form of full bisection gives each flow its line rate from start to end: the flow's bytes on
the wire (payload and a header per frame) at 100G, the last frame's store-and-forward at each switch on
its path, and the path's propagation out and back (the sender's completion is the acknowledgment of its
last byte, in both simulators). Every row is set against it: median, p99 and largest completion time and
the total time (the last flow's end; every flow starts at 0).
"""

from __future__ import annotations

import math
import re
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

from fabricsim.bench.htsim_work import connection_matrix, permutation
from fabricsim.errors import FabricsimError

__all__ = [
    "HTSIM_RUNS", "FABRICSIM_MODES", "closed_form", "fct_stats", "parse_finished", "spray_twin", "compare",
    "htsim_args",
]

K = 8
HOSTS = K ** 3 // 4
FLOW_BYTES = 2_000_000
RATE_BPS = 100_000_000_000
DELAY_PS = 1_000_000
PAYLOAD = 4096
HEADER = 64
FRAME = PAYLOAD + HEADER
QUEUE_FRAMES = 50
SEED = 8  # the permutation of the fattree-k8 timing pair
#: Every row runs with these random seeds (htsim's ``-seed``, fabricsim's scenario seed); its statistics are
#: those of the flows of all runs together (4 x 128 completion times).
SEEDS = (1, 2, 3, 4)

#: htsim rows: (label, driver, arguments after the connection matrix). EQDS counts its MTU with the header,
#: NDP without it (both send 4,160 B frames); NDP's ``-q`` counts 4,096 B units (204,800 B, 1.5 % less).
HTSIM_RUNS: list[tuple[str, str, list[str]]] = [
    ("htsim EQDS, -paths 4096", "htsim_eqds",
     ["-mtu", str(FRAME), "-q", str(QUEUE_FRAMES), "-strat", "ecmp_host", "-paths", "4096"]),
    ("htsim EQDS, -paths 64", "htsim_eqds",
     ["-mtu", str(FRAME), "-q", str(QUEUE_FRAMES), "-strat", "ecmp_host", "-paths", "64"]),
    ("htsim NDP, -strat rand", "htsim_ndp",
     ["-mtu", str(PAYLOAD), "-q", str(QUEUE_FRAMES), "-cwnd", str(QUEUE_FRAMES), "-strat", "rand"]),
    ("htsim NDP, -strat perm", "htsim_ndp",
     ["-mtu", str(PAYLOAD), "-q", str(QUEUE_FRAMES), "-cwnd", str(QUEUE_FRAMES), "-strat", "perm"]),
]

#: fabricsim rows: (label, load-balancing mode, whether the switches trim).
FABRICSIM_MODES: list[tuple[str, str, bool]] = [
    ("fabricsim RoCE, spray_random", "spray_random", False),
    ("fabricsim RoCE, spray_rr", "spray_rr", False),
    ("fabricsim RoCE, ecmp", "ecmp", False),
    ("fabricsim RoCE, spray_random + trimming", "spray_random", True),
    ("fabricsim RoCE, spray_rr + trimming", "spray_rr", True),
]


def htsim_args(matrix: str, extra: Sequence[str], seed: int = 1) -> list[str]:
    """The arguments of an htsim main for the fabric of this pair, the connection matrix ``matrix`` and the
    random ``seed`` (100 ms of simulated time at most)."""
    return ["-tm", matrix, "-nodes", str(HOSTS), "-linkspeed", str(RATE_BPS // 1_000_000), "-hop_latency", "1",
            "-switch_latency", "0", "-seed", str(seed), "-end", "100000", *extra]


def spray_twin(partner: Sequence[int], mode: str, size: int = FLOW_BYTES, trimming: bool = False) -> dict[str, Any]:
    """The fabricsim scenario of this pair with the switches' load-balancing ``mode``; with ``trimming``,
    the switches trim data packets their 50-frame class queue has no room for, and hold the headers (and
    the ACKs) in up to 50 frames' bytes more."""
    if trimming:
        buffer = {"model": "static", "port_size": f"{2 * QUEUE_FRAMES * FRAME}B",
                  "queue_size": f"{QUEUE_FRAMES * FRAME}B"}
    else:
        buffer = {"model": "static", "port_size": f"{QUEUE_FRAMES * FRAME}B"}
    switch: dict[str, Any] = {"latency": "0ns", "load_balancing": mode, "buffer": buffer}
    if trimming:
        switch["trimming"] = {"header": f"{HEADER}B"}
    return {
        "name": f"htsim-spray-k{K}-{mode}" + ("-trimming" if trimming else ""),
        "seed": 1,
        "duration": "1s",
        "network": {
            "ethernet_overhead": "0B",
            "switch": switch,
        },
        "topology": {"kind": "fat_tree", "k": K, "link": {"rate": "100Gbps", "delay": "1us"}},
        "roce": {"mtu": f"{PAYLOAD}B", "header": f"{HEADER}B", "dcqcn": {"enabled": False},
                 "recovery": "selective_repeat", "dupthresh": 64, "rto": "250us"},
        "traffic": [{"kind": "rdma_write", "src": [f"h{i}"], "dst": f"h{d}", "message_size": f"{size}B"}
                    for i, d in enumerate(partner)],
        "stats": {"queue_sample_interval": "0", "throughput_interval": "1ms"},
    }


def _hops(src: int, dst: int) -> int:
    """Links between two hosts of the k=8 fat-tree: 2 under one edge switch, 4 in one pod, 6 across pods."""
    edge, pod = K // 2, K * K // 4
    if src // edge == dst // edge:
        return 2
    return 4 if src // pod == dst // pod else 6


def closed_form(partner: Sequence[int], size: int = FLOW_BYTES) -> list[float]:
    """Each flow's completion time in us at full bisection: its wire bytes at line rate, a full frame's
    store-and-forward at every switch (a shorter last frame waits there behind the full one before it), the
    path's propagation there and back."""
    frames = math.ceil(size / PAYLOAD)
    wire = size + frames * HEADER
    full = min(size, PAYLOAD) + HEADER
    out = []
    for src, dst in enumerate(partner):
        hops = _hops(src, dst)
        ps = wire * 8 * 10**12 / RATE_BPS + (hops - 1) * full * 8 * 10**12 / RATE_BPS + 2 * hops * DELAY_PS
        out.append(ps / 1e6)
    return out


_FINISHED = re.compile(r"^Flow (\S+) .*\bfinished at ([0-9.eE+-]+)", re.MULTILINE)


def parse_finished(text: str, flows: int) -> list[float]:
    """The completion times (us) of an htsim EQDS or NDP run's ``Flow ... finished at T`` lines; an error when
    fewer than ``flows`` finished."""
    done = [float(m.group(2)) for m in _FINISHED.finditer(text)]
    if len(done) != flows:
        raise ValueError(f"htsim finished {len(done)} of {flows} flows")
    return done


def _percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile, linear between closest ranks (numpy's default)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def fct_stats(fct_us: Sequence[float]) -> dict[str, float]:
    """Median, p99 and largest completion time (us); the largest is also the total time (all start at 0)."""
    return {"median_us": round(statistics.median(fct_us), 3), "p99_us": round(_percentile(fct_us, 99), 3),
            "max_us": round(max(fct_us), 3)}


def _fabricsim_row(partner: Sequence[int], mode: str, trimming: bool, seeds: Sequence[int]) -> dict[str, Any]:
    import fabricsim
    from fabricsim.schema import from_dict

    fct: list[float] = []
    row: dict[str, Any] = {"max_per_seed_us": [], "timeouts_per_seed": [], "events": 0, "dropped": 0,
                           "retransmitted": 0, "timeouts": 0, "trimmed": 0}
    for seed in seeds:
        result = fabricsim.run(from_dict(spray_twin(partner, mode, trimming=trimming)), seed=seed)
        s = result.summary
        if s["rdma_qps_completed"] != len(partner) or not s["conservation_ok"]:
            raise FabricsimError(f"fabricsim completed {s['rdma_qps_completed']} of {len(partner)} queue pairs "
                               f"({mode}, seed {seed})")
        times = [v / 1e6 for v in result.flows["fct_ps"].to_list()]
        fct += times
        row["max_per_seed_us"].append(round(max(times), 3))
        row["timeouts_per_seed"].append(s["rdma_timeouts"])
        for key, name in (("events", "events"), ("dropped", "packets_dropped"),
                          ("retransmitted", "rdma_retransmits"), ("timeouts", "rdma_timeouts")):
            row[key] += s[name]
        row["trimmed"] += s.get("packets_trimmed", 0)
    return {**fct_stats(fct), **row}


def _htsim_row(directory: Path, driver: str, matrix: Path, extra: Sequence[str],
               seeds: Sequence[int]) -> dict[str, Any]:
    fct: list[float] = []
    row: dict[str, Any] = {"max_per_seed_us": [], "retransmitted": 0}
    for seed in seeds:
        proc = subprocess.run([str(directory / driver), *htsim_args(str(matrix), extra, seed)], cwd=matrix.parent,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise FabricsimError(f"{directory / driver} failed ({proc.returncode}): "
                                 f"{(proc.stdout + proc.stderr).strip()[-400:]}")
        try:
            times = parse_finished(proc.stdout, HOSTS)
        except ValueError as err:
            raise FabricsimError(f"{directory / driver} (seed {seed}): {err}") from None
        fct += times
        row["max_per_seed_us"].append(round(max(times), 3))
        counts = re.search(r"New: (\d+) Rtx: (\d+)", proc.stdout)
        if counts:
            row["retransmitted"] += int(counts.group(2))
    return {**fct_stats(fct), **row}


def compare(directory: Optional[Path], seeds: Sequence[int] = SEEDS) -> dict[str, Any]:
    """Every row of the pair: the closed form, the htsim runs whose main is built in ``directory`` (none
    when it is None), fabricsim's modes, each run once per seed of ``seeds``; each row with its ratios to the
    closed form."""
    partner = permutation(HOSTS, seed=SEED)
    ideal = fct_stats(closed_form(partner))
    rows: list[dict[str, Any]] = [{"row": "closed form", **ideal}]
    if directory is not None:
        with tempfile.TemporaryDirectory(prefix="fabricsim-spray-") as scratch:
            matrix = Path(scratch) / f"perm_{HOSTS}n.cm"
            matrix.write_text(connection_matrix(partner, FLOW_BYTES), encoding="utf-8")
            for label, driver, extra in HTSIM_RUNS:
                if (directory / driver).exists():
                    rows.append({"row": label, **_htsim_row(directory, driver, matrix, extra, seeds)})
    for label, mode, trimming in FABRICSIM_MODES:
        rows.append({"row": label, **_fabricsim_row(partner, mode, trimming, seeds)})
    for row in rows:
        for key in ("median_us", "p99_us", "max_us"):
            row[key.replace("_us", "_x_ideal")] = round(row[key] / ideal[key], 4)
    return {"pair": "spray-k8", "hosts": HOSTS, "flow_bytes": FLOW_BYTES, "seeds": list(seeds), "rows": rows}


def print_table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Spraying, k=8 fat-tree, {HOSTS} x {FLOW_BYTES / 1e6:g} MB permutation, 100G, "
                        f"seeds {', '.join(map(str, result['seeds']))}: completion (us), x closed form")
    for col in ("row", "median", "p99", "max", "x med", "x p99", "x max", "max per seed", "resent", "RTO", "trimmed"):
        table.add_column(col, justify="left" if col == "row" else "right", no_wrap=True)
    for r in result["rows"]:
        table.add_row(r["row"], f"{r['median_us']:.1f}", f"{r['p99_us']:.1f}", f"{r['max_us']:.1f}",
                      f"{r['median_x_ideal']:.3f}", f"{r['p99_x_ideal']:.3f}", f"{r['max_x_ideal']:.3f}",
                      " ".join(f"{v:.0f}" for v in r.get("max_per_seed_us", [])),
                      f"{r['retransmitted']:,}" if "retransmitted" in r else "",
                      f"{r['timeouts']:,}" if "timeouts" in r else "",
                      f"{r['trimmed']:,}" if r.get("trimmed") else "")
    Console(width=max(Console().width, 120)).print(table)
    print("max = total time (every flow starts at 0); statistics of the flows of every seed's run together. htsim's EQDS and NDP are receiver-pulled with trimming; "
          "fabricsim's rows are RoCEv2 at line rate with selective repeat (dupthresh 64), DCQCN off; '+ trimming': "
          "the switches trim as htsim's do.")
