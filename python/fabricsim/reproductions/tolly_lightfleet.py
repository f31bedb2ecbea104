"""R5 ``tolly-lightfleet``: end-to-end latency, throughput and power of a 10G
cut-through switch with low-latency NICs vs a switch-free optical broadcast fabric.

One scenario (``data/tolly-lightfleet/tolly-latency.yaml``) holds both
fabrics, 24 stations each. Latency and throughput per frame size come from
the RFC 2544 procedures (:mod:`fabricsim.experiments.rfc2544`) between two
stations of each fabric, end to end (host latency, serialization, device);
power from :mod:`fabricsim.experiments.power_load` at idle, 10% and 100% load
with bidirectional station-to-station UDP on every port.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from fabricsim.reproductions import page as P
from fabricsim.reproductions.base import Report, Test, grid_points, load_yaml

NAME = "tolly-lightfleet"
PAIRS = {"fm4000-like": ("s0", "s1"), "optical-broadcast": ("f0", "f1")}
NODES = {"ct10g": "fm4000-like", "bcast": "optical-broadcast"}


def latency_throughput(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim import from_dict
    from fabricsim.experiments.rfc2544 import Settings, rfc2544

    sc = from_dict(load_yaml(NAME, "tolly-latency.yaml"))
    frame = int(params["frame_bytes"])
    out = rfc2544(sc, tests=["throughput", "latency"], frame_sizes=[frame], pairs=[PAIRS[params["device"]]],
                  settings=Settings(trial_ps=int(params["trial_us"]) * 1_000_000))
    rows = []
    lat = out["latency"].to_dicts()
    for t in out["throughput"].to_dicts():
        row = {"device": params["device"], "frame_bytes": frame, "throughput_pct": 100 * t["load"],
               "MBps": t["udp_payload_MBps"], "frames_per_s": t["frames_per_s"]}
        if lat:
            lt = lat[0]
            row.update(latency_us=lt["e2e_mean_ps"] / 1e6, device_latency_us=lt["latency_ps"] / 1e6,
                       host_us=lt["host_ps"] / 1e6, serialization_us=lt["serialization_ps"] / 1e6)
        rows.append(row)
    skipped = [{"device": params["device"], "frame_bytes": frame, "reason": "frame larger than the path's MTU"}
               for _ in out["skipped"].iter_rows()] if out["skipped"].height else []
    return {"results": rows, "skipped": skipped}


def power(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    from fabricsim import from_dict
    from fabricsim.experiments.power_load import power_at_loads

    doc = load_yaml(NAME, "tolly-latency.yaml")
    doc["duration"] = f"{params['duration_us']}us"
    t = power_at_loads(from_dict(doc), loads=[float(params["load"])])
    t = t.filter(pl.col("node").is_in(list(NODES))).with_columns(
        pl.col("node").replace_strict(NODES).alias("device"), (pl.col("load") * 100).alias("load_pct"))
    return {"results": t.to_dicts()}


def render(tables: dict[str, pl.DataFrame], full: bool) -> str:
    r = tables.get("latency_throughput/results")
    p = tables.get("power/results")
    text = [P.para(
        "End-to-end latency (tester port to tester port, station stack included as the scenario's 1 us per host) "
        "at the throughput rate, per frame size. The cut-through switch starts forwarding after a 64 B header "
        "(500 ns first bit to first bit at 10G), so its latency grows only with the sender's serialization; the "
        "broadcast fabric's adapter-to-adapter latency (300 ns, an assumption) and its 14 B header drive the other "
        "series.")]
    if r is not None and r.height and "latency_us" in r.columns:
        small = r.filter(pl.col("frame_bytes") == 64)
        vals = dict(zip(small["device"].to_list(), small["latency_us"].to_list()))
        if len(vals) == 2:
            text.append(P.finding(
                f"The report finds the switch-free fabric has lower end-to-end latency. At 64 B here: "
                f"optical-broadcast {vals['optical-broadcast']:.3f} us, fm4000-like {vals['fm4000-like']:.3f} us.",
                vals["optical-broadcast"] < vals["fm4000-like"]))
    return "".join([
        P.test_section(
            "Latency per frame size",
            P.line_figure("tolly-latency", r, "frame_bytes", "latency_us", xlabel="frame size (B)",
                          ylabel="end-to-end latency (us)", logx=True),
            *text),
        P.test_section(
            "Throughput per frame size",
            P.line_figure("tolly-throughput", r, "frame_bytes", "MBps", xlabel="frame size (B)",
                          ylabel="throughput (MB/s of UDP payload)", logx=True),
            P.para("The largest loss-free rate (RFC 2544 throughput) between two stations, as UDP payload MB/s. "
                   "Both fabrics carry 10G line rate at every size in the model; MB/s differ only by the "
                   "per-frame overhead, which weighs most on small frames."),
            P.table(r), P.details_table("Frame sizes not run", tables.get("latency_throughput/skipped"))),
        P.test_section(
            "Power at idle, 10% and 100% load",
            P.line_figure("tolly-power", p, "load_pct", "mean_w", xlabel="load (% of 10G per port)",
                          ylabel="mean power (W)"),
            P.para("Power of each fabric with 24 ports in use, bidirectional station-to-station UDP. The power "
                   "model is a fixed part per device and port plus energy per bit and per packet "
                   "(docs/models/power.md); the per-port figures are from public typical values, the split "
                   "between fixed and traffic-proportional parts is an assumption."),
            P.table(p))])


REPORT = Report(
    name=NAME,
    title="tolly-lightfleet: end-to-end latency, throughput and power",
    summary=("Two end stations through a 10G cut-through switch with low-latency NICs, and through a switch-free "
             "optical broadcast fabric with its own adapters; RFC 2544 frame sizes plus 2176 and 9216 B; power "
             "with 24 ports in use at idle, 10% and 100% load."),
    devices=tuple(PAIRS),
    tests=(
        Test("latency_throughput", "Latency and throughput per frame size", grid_points(NAME, "latency_throughput"),
             latency_throughput, seconds=1.5),
        Test("power", "Power at idle, 10% and 100% load", grid_points(NAME, "power"), power, seconds=3.0),
    ),
    render=render,
    reductions=(
        "RFC 2544 trials of 1 ms (--full: 10 ms; RFC 2544 asks for 60 s) and power runs of 2 ms (--full: 20 ms).",
        "Latency is one-way tester-to-tester at the throughput rate, not a UDP ping-pong half round trip: the "
        "stations are modelled by a fixed 1 us host latency, not by the host datapath model.",
        "Multicast (native on the fabric, unicast copies on the switch) is in the scenario but not reported on "
        "its own; the power runs carry unicast only.",
    ),
    golden_tests=("latency_throughput",),
)
