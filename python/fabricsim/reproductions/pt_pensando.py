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

from typing import Any, Mapping, Optional

import polars as pl

from fabricsim.reproductions import page as P
from fabricsim.reproductions.base import Assumption, Report, Test, assume, grid_points, load_yaml
from fabricsim.reproductions.claims import Simulated, frame

NAME = "pt-pensando"
LABELS = {"a": "a: services card (whole pipeline)", "b": "b: SmartNIC + OVS offload, no conntrack",
          "c": "c: SmartNIC + kernel conntrack"}


def throughput(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    import fabricsim
    from fabricsim.experiments.sdn import configure

    base = load_yaml(NAME, "pt-sdn.yaml")
    base["traffic"] = [t for t in base["traffic"] if t["kind"] == "iperf3"]
    data = assume(configure(base, params["config"]), params)
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
    return "".join([
        P.test_section(
            "Throughput per MTU (Gbps)",
            P.line_figure("sdn-gbps", t, "mtu", "gbps", series=("configuration",), facet="instances",
                          xlabel="MTU (B)", ylabel="Gbps", logx=True),
            P.line_figure("sdn-mpps", t, "mtu", "mpps", series=("configuration",), facet="instances",
                          xlabel="MTU (B)", ylabel="packets/s (millions)", logx=True),
            P.para(
                "iperf3 TCP goodput and packets per second through the VXLAN overlay for each MTU and 1, 4, 16 and "
                "32 instances (one panel per instance count). The card's pipeline rate (a, 300 Mpps, read from "
                "Pensando/ONF's 'wire rate') and the SmartNIC eswitch's (b and c, 200 Mpps, no public figure) are "
                "assumptions of the scenario; neither is reached here. The hosts' kernel stack is the same in every "
                "configuration (the linux-kernel preset): at small MTUs the driver's cost per received frame on the "
                "instances' cores sets the packet rate, and at large MTUs the 100G link sets the rate. Configuration c adds the kernel conntrack stage (its cost "
                "measured on this project's Linux lab, without the tunnel: the SmartNIC decapsulates) before TCP; "
                "like the TCP stage it is paid once per GRO or TSO batch of up to 64 KB, not once per frame."),
            P.details_table("All throughput points", t)),
        P.test_section(
            "Latency per message size (sockperf ping-pong, one instance)",
            P.line_figure("sdn-latency", lat, "message_bytes", "mean_us", series=("configuration",),
                          xlabel="message size (B)", ylabel="one-way latency, mean (us)", logx=True),
            P.para("One-way latency is half of each ping-pong round trip, as sockperf reports it. A UDP message is "
                   "one datagram and is never batched, so configuration c pays the kernel conntrack stage on each "
                   "message on both hosts; the card and the eswitch take the same 500 ns per pass, so a and b have "
                   "the same latency."),
            P.table(lat)),
    ])


# The report's words, read as numbers (the same reading for every claim).
#: "comparable", "slightly above": within 10 % of each other; a "clear advantage": more than 10 % ahead.
NEAR = 0.10
#: "far below", "much higher", ">>": a factor of 2 or more.
FAR = 2.0


def _tput_scale(full: bool) -> str:
    run = "20 ms iperf3 runs, 2 ms omitted" if full else "2 ms iperf3 runs, 0.5 ms omitted"
    return f"{run} (the report ran seconds)"


def _lat_scale(full: bool) -> str:
    return f"{20000 if full else 2000:,} ping-pongs per size"


def _curves(tables: Mapping[str, Any], key: str, x: str, y: str, **where: Any) -> dict[str, dict[int, float]]:
    """``{config: {x: y}}`` of table ``key`` for the rows matching ``where``; every configuration at the same x."""
    t = frame(tables, key)
    for column, value in where.items():
        t = t.filter(pl.col(column) == value)
    out = {c: {int(r[x]): float(r[y]) for r in t.filter(pl.col("config") == c).iter_rows(named=True)}
           for c in LABELS}
    xs = set(out["a"])
    if not xs or any(set(v) != xs for v in out.values()):
        raise KeyError(f"table {key} lacks points of some configuration at {where}")
    return out


def _tput(tables: Mapping[str, Any], y: str, instances: int) -> dict[str, dict[int, float]]:
    return _curves(tables, "throughput/results", "mtu", y, instances=instances)


def _lat(tables: Mapping[str, Any]) -> dict[str, dict[int, float]]:
    return _curves(tables, "latency/results", "message_bytes", "mean_us")


def _span(r: dict[int, float], unit: str = "B MTU", each: str = "MTU") -> str:
    """The range of the ratios ``r`` (per x) and where its ends are."""
    lo, hi = min(r, key=r.get), max(r, key=r.get)
    if f"{r[lo]:.3f}" == f"{r[hi]:.3f}":
        return f"{r[lo]:.3f} at every {each}"
    return f"{r[lo]:.2f} ({lo} {unit}) to {r[hi]:.2f} ({hi} {unit})"


def _point(tables: Mapping[str, Any], y: str, instances: int, mtu: int) -> dict[str, float]:
    c = _tput(tables, y, instances)
    if mtu not in c["a"]:
        raise KeyError(f"no throughput point at {mtu} B MTU")
    return {k: v[mtu] for k, v in c.items()}


def _ratio_a_c(y: str, instances: int, mtu: int):
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        v = _point(tables, y, instances, mtu)
        return Simulated(v["a"] / v["c"], holds=v["a"] > v["c"],
                         text=f"{v['a'] / v['c']:.2f}x (a {v['a']:.2f}, c {v['c']:.2f} Gbps)", scale=_tput_scale(full))
    return f


def _comparable(y: str, instances: int):
    """a within NEAR of b at every MTU."""
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        c = _tput(tables, y, instances)
        r = {m: c["a"][m] / c["b"][m] for m in c["a"]}
        return Simulated(holds=all(abs(x - 1) <= NEAR for x in r.values()),
                         text=f"a/b {_span(r)}", scale=_tput_scale(full))
    return f


def _ct_penalty(y: str, instances: int):
    """c below a and b at every MTU, and at most half of the lower of them at some MTU."""
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        c = _tput(tables, y, instances)
        r = {m: c["c"][m] / min(c["a"][m], c["b"][m]) for m in c["a"]}
        return Simulated(holds=all(x < 1 for x in r.values()) and min(r.values()) <= 1 / FAR,
                         text=f"c/min(a, b) {_span(r)}", scale=_tput_scale(full))
    return f


def _ahead(ratios: Mapping[Any, float]) -> bool:
    """A clear advantage: more than NEAR ahead somewhere and nowhere more than NEAR behind."""
    return max(ratios.values()) > 1 + NEAR and min(ratios.values()) >= 1 - NEAR


def _gbps_vs_noct_16(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    c = _tput(tables, "gbps", 16)
    r = {m: c["a"][m] / c["b"][m] for m in c["a"]}
    return Simulated(holds=_ahead(r), text=f"a/b {_span(r)}", scale=_tput_scale(full))


def _excess_vs_noct_16_8192(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    v = _point(tables, "gbps", 16, 8192)
    pct = (v["a"] - v["b"]) / v["b"] * 100
    return Simulated(pct, holds=v["a"] > v["b"], text=f"{pct:.1f} % (a {v['a']:.2f}, b {v['b']:.2f} Gbps)",
                     scale=_tput_scale(full))


def _gbps_vs_ct_16_all(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    c = _tput(tables, "gbps", 16)
    r = {m: c["a"][m] / c["c"][m] for m in c["a"]}
    return Simulated(holds=all(x >= FAR for x in r.values()), text=f"a/c {_span(r)}", scale=_tput_scale(full))


def _headline(y: str, unit: str):
    """The largest a/c over every instance count and MTU."""
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        t = frame(tables, "throughput/results")
        best = None
        for n in sorted(t["instances"].unique().to_list()):
            c = _tput(tables, y, n)
            for m in c["a"]:
                r = c["a"][m] / c["c"][m]
                if best is None or r > best[0]:
                    best = (r, n, m, c["a"][m], c["c"][m])
        r, n, m, a, cc = best
        where = f"{n} instance{'s' if n > 1 else ''}, {m} B MTU"
        return Simulated(r, holds=r > 1, text=f"{r:.2f}x at {where} (a {a:.2f}, c {cc:.2f} {unit})",
                         scale=_tput_scale(full))
    return f


def _lat_at(tables: Mapping[str, Any], size: int) -> dict[str, float]:
    c = _lat(tables)
    if size not in c["a"]:
        raise KeyError(f"no latency point at {size} B")
    return {k: v[size] for k, v in c.items()}


def _lat_reduction_9000(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    v = _lat_at(tables, 9000)
    pct = (1 - v["a"] / v["c"]) * 100
    return Simulated(pct, holds=v["a"] < v["c"], text=f"{pct:.1f} % (a {v['a']:.2f}, c {v['c']:.2f} us)",
                     scale=_lat_scale(full))


def _lat_ratio_9000(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    v = _lat_at(tables, 9000)
    return Simulated(v["a"] / v["c"], holds=v["a"] < v["c"],
                     text=f"{v['a'] / v['c']:.3f} (a {v['a']:.2f}, c {v['c']:.2f} us)", scale=_lat_scale(full))


def _lat_half_9000(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    v = _lat_at(tables, 9000)
    return Simulated(holds=v["a"] < 0.5 * v["c"],
                     text=f"a {v['a']:.2f} us, c {v['c']:.2f} us (a/c {v['a'] / v['c']:.3f})", scale=_lat_scale(full))


def _lat_headline(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    c = _lat(tables)
    r = {m: (1 - c["a"][m] / c["c"][m]) * 100 for m in c["a"]}
    m = max(r, key=r.get)
    return Simulated(r[m], holds=c["a"][m] < c["c"][m],
                     text=f"{r[m]:.1f} % at {m} B (a {c['a'][m]:.2f}, c {c['c'][m]:.2f} us)", scale=_lat_scale(full))


def _lat_lowest(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    c = _lat(tables)
    rb = {m: c["b"][m] / c["a"][m] for m in c["a"]}
    rc = {m: c["c"][m] / c["a"][m] for m in c["a"]}
    return Simulated(holds=all(rb[m] > 1 and rc[m] > 1 for m in c["a"]),
                     text=f"b/a {_span(rb, 'B', 'size')}; c/a {_span(rc, 'B', 'size')}", scale=_lat_scale(full))


def _lat_trend(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    a = _lat(tables)["a"]
    sizes = sorted(a)
    rises = all(a[y] > a[x] for x, y in zip(sizes, sizes[1:]))
    growth = a[sizes[-1]] / a[sizes[0]]
    return Simulated(holds=rises and growth < FAR,
                     text=f"a {a[sizes[0]]:.2f} us at {sizes[0]} B to {a[sizes[-1]]:.2f} us at {sizes[-1]} B "
                          f"({growth:.2f}x, {'rising' if rises else 'not rising'} at every step)",
                     scale=_lat_scale(full))


def _lat_noct_gap(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    c = _lat(tables)
    r = {m: c["b"][m] / c["a"][m] for m in c["a"]}
    return Simulated(holds=all(1 < x <= 1 + NEAR for x in r.values()), text=f"b/a {_span(r, 'B', 'size')}",
                     scale=_lat_scale(full))


def _lat_ct_penalty(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    c = _lat(tables)
    r = {m: c["c"][m] / c["a"][m] for m in c["a"]}
    most_at_largest = max(r, key=r.get) == max(r)
    return Simulated(holds=all(x >= FAR for x in r.values()) and most_at_largest,
                     text=f"c/a {_span(r, 'B', 'size')}", scale=_lat_scale(full))


def _overall(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """a clearly ahead of b and of c in Gbps and in packets/s over every instance count and MTU, and a's
    latency below both at every size."""
    t = frame(tables, "throughput/results")
    ahead, parts = True, []
    for y in ("gbps", "mpps"):
        for other in ("b", "c"):
            r = {}
            for n in sorted(t["instances"].unique().to_list()):
                c = _tput(tables, y, n)
                r.update({(n, m): c["a"][m] / c[other][m] for m in c["a"]})
            ahead &= _ahead(r)
            parts.append(f"{y} a/{other} {min(r.values()):.2f} to {max(r.values()):.2f}")
    c = _lat(tables)
    lower = all(c["a"][m] < min(c["b"][m], c["c"][m]) for m in c["a"])
    rl = [c[o][m] / c["a"][m] for o in ("b", "c") for m in c["a"]]
    parts.append(f"latency b/a and c/a {min(rl):.2f} to {max(rl):.2f}")
    return Simulated(holds=ahead and lower, text="; ".join(parts), scale=f"{_tput_scale(full)}; {_lat_scale(full)}")


CLAIMS: dict[str, Any] = {
    "throughput.gbps.ratio.pensando_vs_ct.4inst.mtu256": _ratio_a_c("gbps", 4, 256),
    "throughput.gbps.comparable.4inst": _comparable("gbps", 4),
    "throughput.pps.comparable.4inst": _comparable("mpps", 4),
    "throughput.gbps.ct_penalty.4inst": _ct_penalty("gbps", 4),
    "throughput.pps.ct_penalty.4inst": _ct_penalty("mpps", 4),
    "throughput.pps.comparable.16inst": _comparable("mpps", 16),
    "throughput.pps.ct_penalty.16inst": _ct_penalty("mpps", 16),
    "throughput.gbps.vs_noct.16inst": _gbps_vs_noct_16,
    "throughput.gbps.excess_pct.pensando_vs_noct.16inst.mtu8192": _excess_vs_noct_16_8192,
    "throughput.gbps.vs_ct.16inst.all_mtu": _gbps_vs_ct_16_all,
    "throughput.gbps.ratio.pensando_vs_ct.16inst.mtu96": _ratio_a_c("gbps", 16, 96),
    "throughput.gbps.ratio.pensando_vs_ct.16inst.mtu256": _ratio_a_c("gbps", 16, 256),
    "throughput.headline.gbps_ratio": _headline("gbps", "Gbps"),
    "throughput.headline.pps_ratio": _headline("mpps", "Mpps"),
    "latency.reduction_pct.pensando_vs_ct.9000B": _lat_reduction_9000,
    "latency.ratio.pensando_vs_ct.9000B": _lat_ratio_9000,
    "latency.less_than_half.9000B": _lat_half_9000,
    "latency.headline.reduction_pct": _lat_headline,
    "latency.lowest.all_sizes": _lat_lowest,
    "latency.trend.pensando": _lat_trend,
    "latency.noct_gap": _lat_noct_gap,
    "latency.ct_penalty": _lat_ct_penalty,
    "summary.overall": _overall,
    "vendor.claim.low_latency_jitter": (
        "a vendor description with no quantity, condition or baseline: 'high performance', 'low latency', "
        "'low jitter' and 'top scalability' name nothing to compare against, and the report measures no jitter "
        "and no scaling of the card"),
    "vendor.claim.service_chaining": (
        "the scenario gives the card's stages no cost of their own, so a packet takes one pass whatever the "
        "chain (its reading of Pensando/ONF's 'wire rate'): a simulated 'no loss from chaining' would only "
        "restate that assumption; the report measures no chain of different lengths"),
}


def _stages_with_ovs(stages: list[dict[str, Any]], us_per_pass: float) -> list[dict[str, Any]]:
    """Configuration c's host ``stages`` with an OVS-like kernel datapath before its conntrack: a flow-table
    lookup per frame, twice (OVS sends a packet through conntrack with ``ct(table=N)`` and looks it up again
    on recirculation), costing ``us_per_pass`` each time, in each direction."""
    cost = {"per_packet": f"{2 * us_per_pass:g}us"}
    at = next((i for i, st in enumerate(stages) if st["kind"] == "conntrack"), len(stages))
    return [*stages[:at], {"kind": "acl", "name": "ovs_datapath", "tx": cost, "rx": cost}, *stages[at:]]


def _c_stages() -> list[dict[str, Any]]:
    from fabricsim.experiments.sdn import configure

    return list(configure(load_yaml(NAME, "pt-sdn.yaml"), "c")["network"]["host"]["model"]["stages"])


#: Which host offloads survive the SmartNIC's software datapath: the lab measured that the kernel's VXLAN and
#: nftables conntrack keep GRO's and GSO's batches (docs/validation/linux-datapath.md, "Which batching survives
#: which datapath"), but not the OVS kernel datapath (not in the lab kernel); the space runs configuration c
#: with them lost, partly or wholly, as that datapath would have to lose them.
_C_STAGES = _c_stages()
_NO_OFFLOADS = {"network.host.model.gso": 0, "network.host.model.tso": False, "network.host.model.gro": 0}
ASSUMPTIONS = (
    Assumption(
        "offloads lost in c's kernel datapath", "throughput", {"config": "c"},
        (("configuration c's hosts lose GRO (every received frame climbs the stack alone)",
          {"network.host.model.gro": 0}),
         ("configuration c's hosts lose TSO, GSO and GRO (every frame pays every stage)", dict(_NO_OFFLOADS)),
         *((f"configuration c's hosts lose TSO, GSO and GRO and every frame crosses an OVS kernel datapath twice "
            f"(conntrack, then the lookup after recirculation) at {us:g} us per pass",
            {**_NO_OFFLOADS, "network.host.model.stages": _stages_with_ovs(_C_STAGES, us)})
           for us in (0.5, 1.0, 2.0))),
        why=("the lab measured that the kernel's VXLAN and conntrack keep GRO's and GSO's batches; whether the "
             "OVS kernel datapath beside them does, and what its lookups cost, is not measured (not in the lab "
             "kernel)")),
)


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
    claims=CLAIMS,
    assumptions=ASSUMPTIONS,
    reductions=("iperf3 runs of 2 ms with the first 0.5 ms omitted (--full: 20 ms; the report ran seconds); "
                "2000 ping-pongs per message size (--full: 20000).",
                "Ten MTUs: the report's examples 96..9000 B, with 6000 B added to make ten; eight message sizes "
                "from sockperf's default 14 B to the report's largest, 9000 B (its other sizes are only in a chart)."),
    golden_tests=("latency",),
)
