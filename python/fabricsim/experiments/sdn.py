"""The SDN datapath comparison of test plan R2 (``scenarios/pt-sdn.yaml``):
three configurations of the same VXLAN overlay between two 100G servers,
swept over MTU and iperf3 instances, and a ping-pong latency per message size.

- ``a``: the whole pipeline in the services card's hardware (the scenario as shipped);
- ``b``: a SmartNIC with OVS hardware offload: the pipeline without
  connection tracking, in the SmartNIC's eswitch (:data:`SMARTNIC_RATE`);
- ``c``: the same SmartNIC, with connection tracking done per packet by the
  host kernel: a software ``conntrack`` stage on the host cores, with the
  lab's measured cost of Linux conntrack on plain (decapsulated) packets.

``python -m fabricsim.experiments.sdn --out DIR [--quick]`` runs the grid and
writes ``throughput.parquet`` (Gbps and packets/s per configuration, MTU and
instance count) and ``latency.parquet`` (one-way latency percentiles per
configuration and message size).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterable, Optional

from fabricsim.shipped import scenario_path
from fabricsim.hosts import linux_veth

__all__ = ["CONFIGS", "INSTANCES", "MESSAGE_SIZES", "MTUS", "configure", "latency", "throughput"]

SCENARIO = scenario_path("pt-sdn.yaml")
CONFIGS = ("a", "b", "c")
#: Ten MTUs from 96 to 9000 B (the test plan's examples, completed).
MTUS = (96, 256, 512, 1024, 1500, 2048, 4096, 6000, 8192, 9000)
INSTANCES = (1, 4, 16, 32)
#: sockperf message sizes (its default is 14 B).
MESSAGE_SIZES = (14, 64, 256, 1024, 1472, 4096, 8192)
#: Assumption: the SmartNIC's eswitch issues 200 M passes/s (no public figure found).
SMARTNIC_RATE = "200Mpps"


def configure(data: dict[str, Any], config: str) -> dict[str, Any]:
    """The scenario ``data`` (configuration a, as shipped) turned into configuration ``config``."""
    if config not in CONFIGS:
        raise ValueError(f"config: unknown value {config!r}; allowed: {', '.join(CONFIGS)}")
    out = copy.deepcopy(data)
    host = out["network"]["host"]
    if config == "a":
        return out
    pipe = host["pipeline"]
    pipe["rate"] = SMARTNIC_RATE
    pipe["stages"] = [s for s in pipe["stages"] if s["kind"] != "conntrack"]
    if config == "c":
        model = host["model"]
        model = {"preset": model} if isinstance(model, str) else dict(model)
        from fabricsim import hosts

        base = hosts.merged(model.get("preset", "linux-kernel"), model)
        stages = list(base["stages"])
        # The kernel's conntrack hook runs after the IP layer, before TCP: insert it before the tcp stage.
        at = next((i for i, s in enumerate(stages) if s["kind"] == "tcp"), len(stages))
        stages.insert(at, linux_veth.conntrack_stage(tunnel=False))
        model["stages"] = stages
        host["model"] = model
    return out


def _base() -> dict[str, Any]:
    from fabricsim.schema._yaml import parse

    return parse(SCENARIO.read_text())


def throughput(
    configs: Iterable[str] = CONFIGS,
    mtus: Iterable[int] = MTUS,
    instances: Iterable[int] = INSTANCES,
    duration: str = "2ms",
    omit: str = "500us",
    seed: int = 1,
) -> list[dict[str, Any]]:
    """iperf3 Gbps and packets/s for each configuration, MTU and instance count."""
    import fabricsim

    rows = []
    base = _base()
    base["traffic"] = [t for t in base["traffic"] if t["kind"] == "iperf3"]
    for config in configs:
        for mtu in mtus:
            for n in instances:
                data = configure(base, config)
                data["tcp"] = {**data.get("tcp", {}), "mtu": mtu}
                data["traffic"][0].update({"instances": n, "duration": duration, "omit": omit})
                data["duration"] = duration
                r = fabricsim.run(fabricsim.from_dict(data), seed=seed, progress=False)
                rows.append(
                    {
                        "config": config,
                        "mtu": mtu,
                        "instances": n,
                        "gbps": float(r.summary["iperf3_gbps"]),
                        "packets_per_s": float(r.summary["iperf3_packets_per_s"]),
                        "host_cpu_busy_ps": int(r.summary["host_cpu_busy_ps"]),
                        "conservation_ok": bool(r.summary["conservation_ok"]),
                    }
                )
    return rows


def latency(
    configs: Iterable[str] = CONFIGS, sizes: Iterable[int] = MESSAGE_SIZES, messages: int = 2000, seed: int = 1
) -> list[dict[str, Any]]:
    """sockperf-like UDP ping-pong one-way latency per configuration and message size (one instance)."""
    import fabricsim

    rows = []
    base = _base()
    base["traffic"] = [t for t in base["traffic"] if t["kind"] == "ping_pong"]
    for config in configs:
        for size in sizes:
            data = configure(base, config)
            data["tcp"] = {**data.get("tcp", {}), "mtu": 9000}
            data["traffic"][0].update({"message_size": size, "messages": messages, "start": 0})
            data["duration"] = "1s"
            r = fabricsim.run(fabricsim.from_dict(data), seed=seed, progress=False)
            t = r.tables()["ping_pong"]
            row = {"config": config, "message_bytes": size}
            for q in ("mean", "p50", "p99", "p999", "max"):
                row[f"{q}_us"] = float(t[f"latency_{q}_ps"][0]) / 1e6
            rows.append(row)
    return rows


def _main(argv: Optional[list[str]] = None) -> int:
    import argparse

    import polars as pl

    parser = argparse.ArgumentParser(prog="python -m fabricsim.experiments.sdn")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true", help="MTUs 1500 and 9000, 1 and 4 instances, 3 message sizes")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    mtus, inst, sizes = (1500, 9000), (1, 4), (14, 1024, 8192)
    if not args.quick:
        mtus, inst, sizes = MTUS, INSTANCES, MESSAGE_SIZES
    tput = pl.DataFrame(throughput(mtus=mtus, instances=inst))
    lat = pl.DataFrame(latency(sizes=sizes))
    tput.write_parquet(args.out / "throughput.parquet")
    lat.write_parquet(args.out / "latency.parquet")
    with pl.Config(tbl_rows=200):
        print(tput)
        print(lat)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
