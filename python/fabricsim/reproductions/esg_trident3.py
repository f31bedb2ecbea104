"""R1 ``esg-trident3``: a 32x100G Trident 3 class ToR switch vs a 16 MB class competitor.

Devices: ``trident3-like`` (preset) and ``competitor-16mb-a8``: the
``spectrum-like`` preset (16 MB single shared pool, 256 B cells) with its egress
dynamic-threshold alpha raised from 2 to 8, as the report's competitor was
configured. Tests: TCP incast per transfer size, TCP beside RoCEv2, burst
absorption (2:1 and 4:1 per frame size), forwarding with ACLs on, and fairness
among 6, 8 and 16 sources. Scenario files: ``data/esg-trident3/``.
"""

from __future__ import annotations

import copy
from typing import Any

import polars as pl

from fabricsim.reproductions import page as P
from fabricsim.reproductions.base import Report, Test, grid_points, load_yaml

NAME = "esg-trident3"

#: Switch settings of each compared device (a preset plus the report's configuration changes).
DEVICES: dict[str, dict[str, Any]] = {
    "trident3-like": {"device": "trident3-like"},
    # The spectrum-like preset has no pipeline; the ACL scenarios need one. Assumption: one
    # pipeline at 64 B line rate on all 32 ports (32 x 148.8 Mpps = 4.76 Gpps, the packet rate
    # such 32x100G switches advertise), as the Trident 3 class preset has over its two pipes.
    "competitor-16mb-a8": {"device": "spectrum-like", "buffer": {"alpha": 8},
                           "pipeline": {"pipes": 1, "rate": "4761904762pps"}},
}


def _with_device(doc: dict[str, Any], device: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    network = doc.setdefault("network", {})
    switch = dict(network.get("switch") or {})
    switch.pop("device", None)
    for key, value in DEVICES[device].items():
        if isinstance(value, dict):
            switch[key] = {**(switch.get(key) or {}), **value}
        else:
            switch[key] = value
    network["switch"] = switch
    return doc


def _ideal_s(flows: int, size_mb: float) -> float:
    return flows * size_mb * 1e6 * 8 / 100e9


def _tcp_summary(result: Any, kind: str = "tcp_bulk") -> dict[str, Any]:
    f = result.flows.filter(pl.col("kind") == kind)
    if f.height == 0:
        return {}
    start, end = int(f["start_ps"].min()), f["end_ps"].max()
    done = int(f["completed"].sum())
    jct = (int(end) - start) / 1e12 if end is not None and done == f.height else None
    fct = f["fct_ps"].cast(pl.Float64)
    return {
        "flows": f.height,
        "flows_completed": done,
        "jct_s": jct,
        "per_flow_gbps_mean": float((f["size_bytes"].cast(pl.Float64) * 8 / (fct / 1e12) / 1e9).mean())
        if done else None,
        "retransmits": int(f["retransmits"].sum()),
        "timeouts": int(f["timeouts"].sum()),
    }


def incast(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    import fabricsim

    size = float(params["size_mb"])
    ideal = _ideal_s(256, size)
    doc = _with_device(load_yaml(NAME, "incast.yaml"), params["device"])
    doc["traffic"][0]["size"] = f"{size}MB"
    doc["duration"] = f"{max(6 * ideal, 0.05):.6f}s"
    bin_s = max(ideal / 40, 1e-4)
    doc["stats"]["throughput_interval"] = f"{bin_s * 1e6:.0f}us"
    result = fabricsim.run(fabricsim.from_dict(doc), progress=False)
    drops = result.drops
    row = {"device": params["device"], "size_mb": size, **_tcp_summary(result),
           "ideal_jct_s": ideal,
           "packets_dropped": int(drops["packets"].sum()) if drops.height else 0,
           "max_buffer_bytes": int(result.buffers["high_water_bytes"].max()),
           "conservation_ok": bool(result.summary["conservation_ok"])}
    tp = result.throughput.filter(pl.col("host") == "h0") if "host" in result.throughput.columns else result.throughput
    series = tp.group_by("time_ps").agg(pl.col("bytes").sum()).sort("time_ps")
    rate = [{"device": params["device"], "size_mb": size, "time_s": t / 1e12, "gbps": b * 8 / bin_s / 1e9}
            for t, b in zip(series["time_ps"].to_list(), series["bytes"].to_list())]
    return {"summary": [row], "rate": rate}


def tcp_roce(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    import fabricsim

    size = float(params["size_mb"])
    doc = _with_device(load_yaml(NAME, "tcp-rocev2-mixed.yaml"), params["device"])
    tcp, roce = doc["traffic"]
    tcp["size"] = f"{size}MB"
    roce.update(qps=int(params["roce_qps"]), messages=int(params["roce_messages"]),
                message_size=f"{params['roce_message_kb']}KB")
    doc["duration"] = f"{max(6 * _ideal_s(224, size), 0.05):.6f}s"
    doc["stats"] = {"queue_sample_interval": "0", "throughput_interval": "0"}
    result = fabricsim.run(fabricsim.from_dict(doc), progress=False)
    drops = result.drops
    by_class = {}
    if drops.height:
        for c, n in drops.group_by("class").agg(pl.col("packets").sum()).iter_rows():
            by_class[int(c)] = int(n)
    pauses = result.tables().get("pauses")
    t = _tcp_summary(result)
    r = _tcp_summary(result, "rdma")
    row = {"device": params["device"], "size_mb": size,
           "tcp_jct_s": t.get("jct_s"), "tcp_flows_completed": t.get("flows_completed"),
           "tcp_retransmits": t.get("retransmits"),
           "roce_completion_s": r.get("jct_s"), "roce_qps_completed": r.get("flows_completed"),
           "drops_lossy_class0": by_class.get(0, 0), "drops_lossless_class3": by_class.get(3, 0),
           "drops_other": sum(v for k, v in by_class.items() if k not in (0, 3)),
           "pause_frames_sent": int(pauses["xoff_sent"].sum()) if pauses is not None and pauses.height else 0,
           "max_buffer_bytes": int(result.buffers["high_water_bytes"].max()),
           "conservation_ok": bool(result.summary["conservation_ok"])}
    return {"summary": [row]}


def burst(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim import from_dict
    from fabricsim.experiments.burst_absorption import burst_absorption

    sc = from_dict(_with_device(load_yaml(NAME, "burst-absorption.yaml"), params["device"]))
    t = burst_absorption(sc, ports=int(params["ports"]), frame_sizes=[int(params["frame_bytes"])])
    t = t.with_columns(pl.lit(params["device"]).alias("device"), (pl.col("burst_bytes") / 1e6).alias("burst_mb"))
    return {"results": t.to_dicts()}


def acl(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim import from_dict
    from fabricsim.experiments.features import forwarding

    doc = _with_device(load_yaml(NAME, "esg-acl.yaml"), params["device"])
    doc["duration"] = f"{params['duration_us']}us"
    stats = doc.setdefault("stats", {})
    stats["throughput_interval"] = f"{params['duration_us'] / 20:g}us"
    t = forwarding(from_dict(doc), frame_sizes=[int(params["frame_bytes"])])
    return {"results": t.with_columns(pl.lit(params["device"]).alias("device")).to_dicts()}


def fairness(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim import from_dict
    from fabricsim.experiments.features import fairness as run_fairness

    doc = _with_device(load_yaml(NAME, "esg-fairness.yaml"), params["device"])
    doc["duration"] = f"{params['duration_us']}us"
    shares, summary = run_fairness(from_dict(doc), sources=[int(params["sources"])],
                                   frame_sizes=[int(params["frame_bytes"])])
    dev = pl.lit(params["device"]).alias("device")
    return {"shares": shares.with_columns(dev).to_dicts(), "summary": summary.with_columns(dev).to_dicts()}


def _get(tables: dict[str, pl.DataFrame], key: str) -> pl.DataFrame | None:
    return tables.get(key)


def render(tables: dict[str, pl.DataFrame], full: bool) -> str:
    out = []
    inc = _get(tables, "incast/summary")
    text = [P.para(
        "Job completion time of all 256 flows, per-flow rate, drops and the largest buffer occupancy for each "
        "per-flow transfer size; below, the aggregate receive rate at the server's port over time. With 256 "
        "flows of at most 256 KB windows, up to 64 MB can be in flight towards one 100G port, more than either "
        "buffer. The rate over time is in-order goodput at the server: after a loss, the bytes held behind the hole "
        "reach the application at once when the retransmission fills it, so a bin can exceed the link rate. "
        "The result is driven by the dynamic-threshold limit of one egress queue (alpha/(1+alpha) of the "
        "free shared buffer: 8/9 of it with alpha 8), the per-packet cell rounding, and TCP loss recovery.")]
    if inc is not None and inc.height and "jct_s" in inc.columns:
        a = inc.filter(pl.col("device") == "trident3-like")
        b = inc.filter(pl.col("device") == "competitor-16mb-a8")
        if a.height and b.height:
            da, db = int(a["packets_dropped"].sum()), int(b["packets_dropped"].sum())
            text.append(P.finding(
                f"The report credits the Trident 3 class switch's larger shared buffer with handling incast better. "
                f"Here it dropped {da} packets over all sizes against {db} for the 16 MB competitor.", da <= db))
    out.append(P.test_section(
        "1. TCP incast (16 clients x 16 flows to one 100G port)",
        P.line_figure("incast-jct", inc, "size_mb", "jct_s", xlabel="transfer size per flow (MB)",
                      ylabel="job completion time (s)", logx=True, logy=True),
        P.line_figure("incast-buffer", inc.with_columns(pl.col("max_buffer_bytes") / 1e6) if inc is not None
                      and inc.height else None, "size_mb", "max_buffer_bytes", xlabel="transfer size per flow (MB)",
                      ylabel="maximum buffer used (MB)", logx=True),
        P.line_figure("incast-drops", inc, "size_mb", "packets_dropped", xlabel="transfer size per flow (MB)",
                      ylabel="packets dropped", logx=True),
        P.line_figure("incast-rate", tables.get("incast/rate"), "time_s", "gbps", facet="size_mb",
                      xlabel="time (s)", ylabel="goodput at the server (Gbps)"),
        *text, P.table(inc)))
    mix = _get(tables, "tcp_roce/summary")
    out.append(P.test_section(
        "2. TCP and RoCEv2 at the same time",
        P.line_figure("mixed-tcp-jct", mix, "size_mb", "tcp_jct_s", xlabel="TCP transfer size per flow (MB)",
                      ylabel="TCP job completion (s)", logx=True),
        P.line_figure("mixed-roce", mix, "size_mb", "roce_completion_s", xlabel="TCP transfer size per flow (MB)",
                      ylabel="RoCE completion (s)", logx=True),
        P.para(
            "14 TCP clients (16 flows each, lossy class 0) and 14 RoCEv2 clients (lossless class 3 with PFC, "
            "ECN marking between 153,600 and 1,536,000 B, CNPs in strict-priority class 7) at once. TCP drops "
            "stay in class 0 and RoCE never drops: PFC pauses its senders instead (pause frames counted). The "
            "TCP job time is driven by the TCP share of the port left after strict priority and PFC headroom; "
            "the RoCE time by DCQCN's rate cuts under ECN marks."),
        P.table(mix)))
    b = _get(tables, "burst/results")
    text = [P.para(
        "The largest simultaneous line-rate burst from 2 (and 4) ports into one absorbed with no loss, found by "
        "bisection on the burst length, per frame size. What is absorbed is the egress queue's dynamic "
        "threshold of the shared pool plus what drains during the burst (1/2 or 3/4 of it arrives in excess); "
        "small frames waste cell space (a 192 B frame and its overhead in one 256 B cell), so the MB absorbed "
        "grows with the frame size.")]
    if b is not None and b.height:
        w = b.group_by("device").agg(pl.col("burst_mb").mean())
        d = dict(w.iter_rows())
        if len(d) == 2:
            text.append(P.finding(
                f"The report finds the Trident 3 class switch absorbs larger bursts. Here the mean over frame sizes "
                f"and fan-ins is {d.get('trident3-like', 0):.1f} MB against {d.get('competitor-16mb-a8', 0):.1f} MB.",
                d.get("trident3-like", 0) > d.get("competitor-16mb-a8", 0)))
    out.append(P.test_section(
        "3. Burst absorption (2:1 and 4:1)",
        P.line_figure("burst", b, "frame_bytes", "burst_mb", facet="ports", xlabel="frame size (B)",
                      ylabel="largest lossless burst (MB)", logx=True),
        *text, P.table(b)))
    a = _get(tables, "acl/results")
    text = [P.para(
        "Six adjacent port pairs stream at line rate both ways with 24 ACL rules on (12 permit/deny on every port, "
        "12 DSCP rewrites on some ports). Throughput is driven by the pipeline model's packet rate per pipe "
        "against the frame rate of 100G at the frame size (148.8 Mpps at 64 B); latency by the fixed pipeline "
        "latency of the preset plus serialization.")]
    if a is not None and a.height:
        worst = a.group_by("device").agg(pl.col("throughput_pct").min())
        for dev, pct in worst.iter_rows():
            text.append(P.finding(
                f"The report finds line rate at every size with the ACLs on; {dev} forwards at least {pct:.2f}% of "
                "line rate here.", pct >= 99.9))
    out.append(P.test_section(
        "4. Forwarding with ACL features on",
        P.line_figure("acl-throughput", a, "frame_bytes", "throughput_pct", xlabel="frame size (B)",
                      ylabel="throughput (% of line rate)"),
        P.line_figure("acl-latency", a, "frame_bytes", "latency_mean_ns", xlabel="frame size (B)",
                      ylabel="mean latency (ns)"),
        *text, P.table(a)))
    s = _get(tables, "fairness/summary")
    text = [P.para(
        "N sources drawn at random (seeded) send to one port, ACLs rewriting DSCP by class and dropping a 5% share "
        "of each source's traffic. Each source's share of the output port: the min and max shares and Jain's "
        "index are shown. The shares are driven by the device's input arbitration model (hierarchical by pipe "
        "where the preset has pipes, otherwise round robin among inputs) and the order frames arrive in.")]
    if s is not None and s.height:
        for dev, j in s.group_by("device").agg(pl.col("jain").min()).iter_rows():
            text.append(P.finding(
                f"The report finds every source gets an equal share; the least fair case on {dev} has Jain's index "
                f"{j:.4f}.", j >= 0.99))
    out.append(P.test_section(
        "5. Bandwidth fairness (N:1)",
        P.line_figure("fairness-min", s, "sources", "share_min", facet="frame_bytes", xlabel="sources",
                      ylabel="smallest share of the port"),
        P.line_figure("fairness-jain", s, "sources", "jain", facet="frame_bytes", xlabel="sources",
                      ylabel="Jain's fairness index"),
        *text, P.table(s), P.table(tables.get("fairness/shares"), limit=60)))
    return "".join(out)


REPORT = Report(
    name=NAME,
    title="esg-trident3: 32x100G shared-buffer ToR vs a 16 MB competitor",
    summary=("A Trident 3 class switch (32 MB shared buffer, 256 B cells, one service pool, dynamic thresholds, "
             "SDK reservations) against a 32x100G competitor with a 16 MB class buffer whose egress alpha was raised "
             "from 2 to 8; servers on 100G."),
    devices=tuple(DEVICES),
    tests=(
        Test("incast", "TCP incast per transfer size", grid_points(NAME, "incast"), incast, seconds=10.0,
             scenarios=("incast.yaml",)),
        Test("tcp_roce", "TCP + RoCEv2", grid_points(NAME, "tcp_roce"), tcp_roce, seconds=8.0,
             scenarios=("tcp-rocev2-mixed.yaml",)),
        Test("burst", "Burst absorption 2:1 and 4:1 per frame size", grid_points(NAME, "burst"), burst, seconds=1.5,
             scenarios=("burst-absorption.yaml",)),
        Test("acl", "Forwarding with ACLs: latency and throughput", grid_points(NAME, "acl"), acl, seconds=3.0,
             scenarios=("esg-acl.yaml",)),
        Test("fairness", "Bandwidth fairness 6/8/16:1", grid_points(NAME, "fairness"), fairness, seconds=2.0,
             scenarios=("esg-fairness.yaml",)),
    ),
    render=render,
    reductions=(
        "Incast and TCP+RoCEv2: per-flow transfer sizes 1, 5, 10, 20, 50 MB (1/200 of the report's 200 MB..10 GB); "
        "TCP+RoCEv2 runs the three smallest, with 100 queue pairs x 10 exchanges of 16 KB per RoCE client "
        "(the report: 100k..1M exchanges; the message size is not given: 16 KB assumed).",
        "ACL forwarding: 200 us of streaming per frame size (--full: 2 ms); fairness: 500 us (--full: 5 ms).",
        "Receive-rate bins are 1/40 of the ideal job time (finer than the report's 2.5 s).",
        "30 servers are in the topology; only those a test uses send.",
    ),
    golden_tests=("burst",),
)
