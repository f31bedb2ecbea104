"""R4 ``esnet-buffers``: how much buffer a long-RTT 10G TCP transfer needs.

The scenario (``data/esnet-buffers/long-rtt.yaml``): a sender 50 ms RTT from
its receiver through one device whose 10G egress port also carries UDP
background; 9000 B MTU; Linux-like TCP (SACK, RACK-TLP, PRR) with H-TCP, the
controller the report's hosts ran, and CUBIC (Linux's default, with HyStart)
as a second series. Three tests: goodput and drops per egress buffer size; per pacing rate
with a 12 MB buffer and 2 or 3 Gbps of background; and a router whose queue
limit is a packet count (2000 and 4096 packets).

The packet-count queue is a shared buffer of 9216 B cells used by one port:
every frame, 64 B or 9018 B, takes one cell, so the limit counts packets.
"""

from __future__ import annotations

import copy
from typing import Any

import polars as pl

from fabricsim.reproductions import page as P
from fabricsim.reproductions.base import Report, Test, grid_points, load_yaml

NAME = "esnet-buffers"
CELL = 9216


def scenario(params: dict[str, Any]) -> dict[str, Any]:
    """The scenario of one point (buffer, background, pacing, cc, duration)."""
    doc = copy.deepcopy(load_yaml(NAME, "long-rtt.yaml"))
    duration = f"{params['duration_s']}s"
    doc["duration"] = duration
    doc["seed"] = int(params.get("run", 1))
    tcp = doc["tcp"]
    cc = params.get("cc", "htcp")
    if cc != "cubic":
        tcp["cc"] = cc
    streams = int(params.get("streams", 2))
    pacing = float(params.get("pacing_gbps") or 0)
    if pacing > 0:
        # The sender's total pacing rate, split evenly over its streams (stated assumption).
        tcp["pacing_rate"] = f"{pacing / streams * 1e9:.0f}bps"
    iperf, background = doc["traffic"]
    iperf.update(streams=streams, duration=duration)
    background["rate"] = f"{params['background_gbps'] * 10:g}%"
    # Each run starts the background at a slightly different time (seeded), as repeated lab runs do.
    background["start_jitter"] = "1ms"
    if params.get("queue_packets"):
        n = int(params["queue_packets"])
        # Dynamic threshold alpha 8 lets one queue take 8/9 of the pool: a pool of ceil(9n/8) cells caps
        # the queue at n packets.
        cells = -(-9 * n // 8)
        doc["network"]["switch"]["buffer"] = {"model": "shared", "size": f"{cells * CELL}B", "cell": f"{CELL}B",
                                              "alpha": 8}
    else:
        doc["network"]["switch"]["buffer"] = {"model": "static", "port_size": f"{params['buffer_mb']}MB"}
    return doc


def run_point(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    import fabricsim

    result = fabricsim.run(fabricsim.from_dict(scenario(params)), progress=False)
    flows = result.flows
    tcp_ids = flows.filter(pl.col("kind") == "tcp_bulk")["flow_id"].to_list()
    skip = int(params["skip_s"] * 1e12)
    secs = params["duration_s"] - params["skip_s"]
    tp = result.throughput.filter(pl.col("flow_id").is_in(tcp_ids) & (pl.col("time_ps") >= skip))
    tcp = flows.filter(pl.col("kind") == "tcp_bulk")
    drops = result.drops
    row = {k: v for k, v in params.items() if k not in ("duration_s", "skip_s")}
    row.update(
        device="packet-queue router" if params.get("queue_packets") else "static-buffer switch",
        tcp_gbps=float(tp["bytes"].sum()) * 8 / secs / 1e9,
        tcp_gbps_whole_run=float(tcp["bytes_delivered"].sum()) * 8 / params["duration_s"] / 1e9,
        packets_dropped=int(drops["packets"].sum()) if drops.height else 0,
        tcp_retransmits=int(tcp["retransmits"].sum()),
        timeouts=int(tcp["timeouts"].sum()),
        conservation_ok=bool(result.summary["conservation_ok"]),
    )
    return {"results": [row]}


def _mean(frame: pl.DataFrame | None, keys: list[str]) -> pl.DataFrame | None:
    if frame is None or frame.height == 0:
        return frame
    keys = [k for k in keys if k in frame.columns]
    return frame.group_by(keys, maintain_order=True).agg(
        pl.col("tcp_gbps").mean(), pl.col("packets_dropped").mean(), pl.col("tcp_retransmits").mean(),
        pl.len().alias("runs")).sort(keys)


def render(tables: dict[str, pl.DataFrame], full: bool) -> str:
    out = []
    t1 = _mean(tables.get("buffer_size/results"), ["cc", "buffer_mb"])
    text1 = [P.para(
        "TCP goodput (two streams, first 5 s omitted) and packets dropped at the egress port for each egress buffer "
        "size, with 2 Gbps of UDP background. The bandwidth-delay product of the 8 Gbps left to TCP at 50 ms is "
        "50 MB; a buffer well below it makes slow start overshoot, and the loss of a window's worth of segments is "
        "what costs throughput. One series per sender controller: H-TCP, which the report's hosts ran, and "
        "CUBIC, Linux's default. The result is driven by the Linux-like TCP model (SACK with RACK-TLP and PRR "
        "repair such a loss in a few round trips), by the controllers' backoff and regrowth (H-TCP backs off to "
        "RTT_min/RTT_max, at most 0.8, and regrows by alpha(Delta) scaled to the 50 ms RTT; CUBIC backs off to "
        "0.7 and regrows along its cubic) and by the drop-tail static buffer.")]
    if t1 is not None and t1.height:
        main_cc = t1.filter(pl.col("cc") == "htcp") if "htcp" in t1["cc"].to_list() else t1
        small = main_cc.filter(pl.col("buffer_mb") == main_cc["buffer_mb"].min())
        big = main_cc.filter(pl.col("buffer_mb") == main_cc["buffer_mb"].max())
        if small.height and big.height:
            lo, hi = float(small["tcp_gbps"][0]), float(big["tcp_gbps"][0])
            text1.append(P.finding(
                f"The report finds throughput falls steeply as the buffer shrinks. Here (H-TCP) {hi:.2f} Gbps with "
                f"{int(big['buffer_mb'][0])} MB and {lo:.2f} Gbps with {int(small['buffer_mb'][0])} MB "
                f"({'a large' if lo < 0.7 * hi else 'only a small'} drop).", lo < 0.7 * hi))
    out.append(P.test_section(
        "1. Throughput and drops per egress buffer size",
        P.line_figure("esnet-buffer-throughput", t1, "buffer_mb", "tcp_gbps", series=("cc",),
                      xlabel="egress buffer (MB)", ylabel="TCP throughput (Gbps)"),
        P.line_figure("esnet-buffer-drops", t1, "buffer_mb", "packets_dropped", series=("cc",),
                      xlabel="egress buffer (MB)", ylabel="packets dropped"),
        *text1, P.table(t1)))
    t2 = _mean(tables.get("pacing/results"), ["background_gbps", "pacing_gbps"])
    text2 = [P.para(
        "With a 12 MB buffer, H-TCP senders paced at 3 to 6 Gbps (split over the two streams), with 2 and 3 Gbps "
        "of background. Pacing below the capacity left by the background keeps the queue from ever filling, so "
        "drops vanish; the model paces each stream's segments evenly at its rate (no bursts from the NIC).")]
    if t2 is not None and t2.height:
        ok = t2.filter(pl.col("pacing_gbps") + pl.col("background_gbps") <= 9)
        if ok.height:
            worst = float(ok["packets_dropped"].max())
            text2.append(P.finding(
                f"The report finds pacing below the available capacity avoids loss; here the paced runs within "
                f"capacity dropped at most {worst:.0f} packets.", worst == 0))
    out.append(P.test_section(
        "2. Pacing with a 12 MB buffer",
        P.line_figure("esnet-pacing-throughput", t2, "pacing_gbps", "tcp_gbps", series=("background_gbps",),
                      xlabel="pacing rate (Gbps)", ylabel="TCP throughput (Gbps)"),
        P.line_figure("esnet-pacing-drops", t2, "pacing_gbps", "packets_dropped", series=("background_gbps",),
                      xlabel="pacing rate (Gbps)", ylabel="packets dropped"),
        *text2, P.table(t2)))
    t3 = _mean(tables.get("packet_queue/results"), ["queue_packets", "pacing_gbps"])
    out.append(P.test_section(
        "3. A router whose queue is counted in packets",
        P.line_figure("esnet-pktq-throughput", t3, "pacing_gbps", "tcp_gbps", series=("queue_packets",),
                      xlabel="pacing rate (Gbps, 0 = unpaced)", ylabel="TCP throughput (Gbps)"),
        P.para(
            "H-TCP senders. A queue limit of 2000 or 4096 packets: with 9000 B frames that is 18 or 36 MB, but every "
            "1500 B background frame takes a whole slot too, so the queue holds fewer bytes than its nominal size "
            "when the background is queued beside TCP. Modelled as a shared buffer of 9216 B cells used by one port "
            "(dynamic threshold alpha 8 over a pool of 9/8 of the limit, so the one queue stops at the packet limit)."),
        P.table(t3)))
    return "".join(out)


REPORT = Report(
    name=NAME,
    title="esnet-buffers: buffer size vs long-RTT 10G TCP throughput",
    summary=("Hosts on 10G through one device, 50 ms RTT, 2 Gbps of UDP background through the same egress, "
             "9000 B MTU, 30 s tests with the first 5 s omitted."),
    devices=("static-buffer switch (egress buffer 6..120 MB)", "packet-queue router (2000/4096 packets)"),
    tests=(
        Test("buffer_size", "Throughput and drops vs egress buffer size", grid_points(NAME, "buffer_size"),
             run_point, seconds=5.0),
        Test("pacing", "Pacing tables (12 MB buffer)", grid_points(NAME, "pacing"), run_point, seconds=4.0),
        Test("packet_queue", "Packet-count queue router", grid_points(NAME, "packet_queue"), run_point,
             seconds=4.0),
    ),
    render=render,
    reductions=(
        "One run per point instead of the average of repeated runs (--full: three runs with different seeds, "
        "which move the background's start); H-TCP and CUBIC senders (--full adds NewReno to the buffer-size test).",
        "Senders run H-TCP as the report's hosts did, modelled as Linux's tcp_htcp (RTT scaling and the "
        "throughput-change rule on, their Linux defaults); the pacing and packet-queue tests use H-TCP only.",
    ),
    golden_tests=("pacing",),
)
