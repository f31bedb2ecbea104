"""R2 ``pt-pensando``: an SDN pipeline on a services card vs a SmartNIC with Open vSwitch.

Two servers on 100G joined through a VXLAN overlay; every packet goes through
parse, VNI match, inner source and destination subnet match, MAC rewrite,
connection tracking and metering. The three configurations are built by
:func:`fabricsim.experiments.sdn.configure` from ``data/pt-pensando/pt-sdn.yaml``:
(a) the whole pipeline in the card's hardware, (b) a SmartNIC with OVS hardware
offload and no connection tracking, (c) the same SmartNIC with connection
tracking in the host kernel, per packet.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricsim.reproductions import page as P
from fabricsim.reproductions.base import Report, Test, grid_points, load_yaml

NAME = "pt-pensando"
LABELS = {"a": "a: services card (whole pipeline)", "b": "b: SmartNIC + OVS offload, no conntrack",
          "c": "c: SmartNIC + kernel conntrack"}


def throughput(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    import fabricsim
    from fabricsim.experiments.sdn import configure

    base = load_yaml(NAME, "pt-sdn.yaml")
    base["traffic"] = [t for t in base["traffic"] if t["kind"] == "iperf3"]
    data = configure(base, params["config"])
    data["tcp"] = {**data.get("tcp", {}), "mtu": int(params["mtu"])}
    duration = f"{params['duration_us']}us"
    data["traffic"][0].update({"instances": int(params["instances"]), "duration": duration,
                               "omit": f"{params['omit_us']}us"})
    data["duration"] = duration
    r = fabricsim.run(fabricsim.from_dict(data), progress=False)
    return {"results": [{"config": params["config"], "configuration": LABELS[params["config"]],
                         "mtu": int(params["mtu"]), "instances": int(params["instances"]),
                         "gbps": float(r.summary["iperf3_gbps"]),
                         "mpps": float(r.summary["iperf3_packets_per_s"]) / 1e6,
                         "host_cpu_busy_ms": int(r.summary["host_cpu_busy_ps"]) / 1e9,
                         "conservation_ok": bool(r.summary["conservation_ok"])}]}


def latency(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    import fabricsim
    from fabricsim.experiments.sdn import configure

    base = load_yaml(NAME, "pt-sdn.yaml")
    base["traffic"] = [t for t in base["traffic"] if t["kind"] == "ping_pong"]
    data = configure(base, params["config"])
    data["tcp"] = {**data.get("tcp", {}), "mtu": 9000}
    data["traffic"][0].update({"message_size": int(params["message_bytes"]), "messages": int(params["messages"]),
                               "start": 0})
    data["duration"] = "1s"
    r = fabricsim.run(fabricsim.from_dict(data), progress=False)
    t = r.tables()["ping_pong"]
    row = {"config": params["config"], "configuration": LABELS[params["config"]],
           "message_bytes": int(params["message_bytes"])}
    for q in ("mean", "p50", "p99", "max"):
        row[f"{q}_us"] = float(t[f"latency_{q}_ps"][0]) / 1e6
    return {"results": [row]}


def render(tables: dict[str, pl.DataFrame], full: bool) -> str:
    t = tables.get("throughput/results")
    lat = tables.get("latency/results")
    text = [P.para(
        "iperf3 TCP goodput and packets per second through the VXLAN overlay for each MTU and 1, 4, 16 and 32 "
        "instances (one panel per instance count). Configuration a is limited by the link and the card's pipeline "
        "rate (300 Mpps, an assumption of the scenario); b by the SmartNIC eswitch's packet rate (200 Mpps, an "
        "assumption: no public figure); c by the host cores running kernel connection tracking on every packet "
        "(its per-packet cost measured on this project's Linux lab), which is what caps it at small MTUs.")]
    if t is not None and t.height:
        small = t.filter(pl.col("mtu") == t["mtu"].min())
        best = dict(small.group_by("config").agg(pl.col("gbps").max()).iter_rows())
        if "a" in best and "c" in best:
            text.append(P.finding(
                f"The report finds the services card far ahead of the SmartNIC with kernel conntrack at small "
                f"packets. At {int(small['mtu'][0])} B MTU here: a {best['a']:.2f} Gbps, b {best.get('b', 0):.2f} "
                f"Gbps, c {best['c']:.2f} Gbps.", best["a"] > 1.5 * best["c"]))
    return "".join([
        P.test_section(
            "Throughput per MTU (Gbps)",
            P.line_figure("sdn-gbps", t, "mtu", "gbps", series=("configuration",), facet="instances",
                          xlabel="MTU (B)", ylabel="Gbps", logx=True),
            P.line_figure("sdn-mpps", t, "mtu", "mpps", series=("configuration",), facet="instances",
                          xlabel="MTU (B)", ylabel="packets/s (millions)", logx=True),
            *text, P.details_table("All throughput points", t)),
        P.test_section(
            "Latency per message size (sockperf ping-pong, one instance)",
            P.line_figure("sdn-latency", lat, "message_bytes", "mean_us", series=("configuration",),
                          xlabel="message size (B)", ylabel="one-way latency, mean (us)", logx=True),
            P.para("One-way latency is half of each ping-pong round trip, as sockperf reports it. Configuration c "
                   "adds the kernel conntrack pass to each message on both hosts; a and b differ by the pipeline "
                   "latency of the card or eswitch."),
            P.table(lat)),
    ])


REPORT = Report(
    name=NAME,
    title="pt-pensando: SDN pipeline on a services card vs SmartNIC + Open vSwitch",
    summary=("Two servers through a VXLAN overlay at 100G; parse, VNI match, inner subnet matches, MAC rewrite, "
             "connection tracking and metering on every packet, in three configurations."),
    devices=tuple(LABELS.values()),
    tests=(
        Test("throughput", "iperf3 Gbps and packets/s per MTU, 1/4/16/32 instances", grid_points(NAME, "throughput"),
             throughput, seconds=0.6),
        Test("latency", "sockperf ping-pong latency per message size", grid_points(NAME, "latency"), latency,
             seconds=0.5),
    ),
    render=render,
    reductions=("iperf3 runs of 2 ms with the first 0.5 ms omitted (--full: 20 ms; the report ran seconds); "
                "2000 ping-pongs per message size (--full: 20000).",
                "Ten MTUs: the report's examples 96..9000 B, with 6000 B added to make ten."),
    golden_tests=("latency",),
)
