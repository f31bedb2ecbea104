"""R3 ``miercom-buffers``: "intelligent buffer" leaves vs a deep-buffer VOQ leaf under data-center load.

Leaf-spine with 2 spines and 2 leaves (4x40G uplinks each), 24 servers on 10G
under leaf A and one requester on 10G under leaf B; the servers answer the
requester (many-to-one) and exchange traffic among themselves (all-to-all at a
quarter of the load). Flow sizes from the data-mining and the enterprise
distributions, Poisson arrivals, TCP NewReno. Every switch of the fabric is
the device under test (the report swaps the leaves; the spines never queue
here: 160G of uplinks against one 10G requester port).

The FCT tables hold two sets of rows (column ``traffic``): ``requester``, the
servers' answers to the requester (the flows the report's script times and
counts), and ``all``, those pooled with the servers' traffic among themselves.
The claims are read from the requester's rows.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Mapping, Optional

import polars as pl

from fabricsim.reproductions import page as P
from fabricsim.reproductions.base import (Assumption, Report, Test, assume, grid_points, load_yaml,
                                         sweep_definition)
from fabricsim.reproductions.claims import TOLERANCE, Simulated, frame

NAME = "miercom-buffers"
FILES = {"datamining": "leafspine-datamining.yaml", "enterprise": "leafspine-enterprise.yaml"}
BUCKETS = {"<=100KB": "<100 KB", "100KB-1MB": "100 KB-1 MB", "1MB-10MB": "1-10 MB", ">10MB": ">10 MB"}
#: The scenario's traffic entries as the tables label them: the answers to the requester, and every flow.
TRAFFIC = {"responses": "requester", "all": "all"}
#: Share of the run whose arrivals are left out of the FCT statistics, at each end.
EDGE = 0.05


def _scenario(params: dict[str, Any], device: str) -> dict[str, Any]:
    duration = params["duration_s"]
    doc = copy.deepcopy(load_yaml(NAME, FILES[params["workload"]]))
    if params["workload"] == "datamining" and params.get("datamining_cdf"):
        for entry in doc["traffic"]:
            entry["cdf"] = params["datamining_cdf"]
    doc["network"]["switch"] = {"device": device}
    doc["duration"] = f"{duration}s"
    doc["load"] = f"{params['load_pct']}%"
    doc["tcp"] = {**(doc.get("tcp") or {}), "cc": params["cc"]}
    doc["fct"] = {"warmup": f"{duration * EDGE:g}s", "cooldown": f"{duration * EDGE:g}s",
                  "buckets": ["100KB", "1MB", "10MB"]}
    # Only the flows' and buffers' tables are read: no queue, throughput or host CPU time series.
    doc["stats"] = {"queue_sample_interval": "0", "throughput_interval": "0", "cpu_interval": "0"}
    return assume(doc, params)


#: More bytes than any frame takes (a 9,216 B jumbo frame and its headers included).
_LARGEST_FRAME = 16_384


def lower_cap(a: Any, b: Any) -> Optional[int]:
    """The lower per-port cap (bytes) of two validated scenarios whose switches differ in that cap
    alone; None when anything else differs or neither has a cap."""
    x, y = a.network.switch, b.network.switch
    if x.buffer is None or y.buffer is None or x.buffer.model != "intelligent" or y.buffer.model != "intelligent":
        return None
    caps = [c for c in (x.buffer.port_max, y.buffer.port_max) if c is not None]
    if not caps:
        return None
    same = (x.model_dump(exclude={"device", "buffer"}) == y.model_dump(exclude={"device", "buffer"})
            and x.buffer.model_dump(exclude={"port_max"}) == y.buffer.model_dump(exclude={"port_max"})
            and a.model_dump(exclude={"network"}) == b.model_dump(exclude={"network"})
            and a.network.model_dump(exclude={"switch"}) == b.network.model_dump(exclude={"switch"}))
    return min(caps) if same else None


def fct(params: dict[str, Any], full: bool) -> dict[str, list[dict[str, Any]]]:
    """One run per device of ``params["devices"]``, except that a device whose switches differ from the
    first's only in the per-port cap is not run when the first run never came within a frame of the lower
    of the two caps: neither cap can have dropped a packet, so the two runs are the same event for event
    (the rows are the first run's, labelled with the device's name; ``derived_from`` says so)."""
    import fabricsim

    devices = params["devices"]
    rows: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    first: Optional[tuple[Any, Any, str]] = None
    for device in devices:
        scenario = fabricsim.from_dict(_scenario(params, device))
        if first is not None:
            cap = lower_cap(first[0], scenario)
            peak = int(first[1].buffers["high_water_bytes"].max())
            if cap is not None and peak + _LARGEST_FRAME <= cap:
                _tables(first[1], params, device, first[2], rows, summaries)
                continue
        result = fabricsim.run(scenario, progress=False)
        if first is None:
            first = (scenario, result, device)
        _tables(result, params, device, None, rows, summaries)
    return {"buckets": rows, "summary": summaries}


def _tables(result: Any, params: dict[str, Any], device: str, derived_from: Optional[str],
            rows: list[dict[str, Any]], summaries: list[dict[str, Any]]) -> None:
    head = {"device": device, "workload": params["workload"], "load_pct": params["load_pct"]}
    f = result.fct
    if "traffic" not in f.columns:
        f = f.with_columns(pl.lit("all").alias("traffic"))
    for r in f.filter(pl.col("traffic").is_in(list(TRAFFIC))).iter_rows(named=True):
        rows.append({**head, "traffic": TRAFFIC[r["traffic"]], "bucket": BUCKETS.get(r["bucket"], r["bucket"]),
                     "flows": r["count"], "incomplete": r["incomplete"],
                     "mean_fct_ms": None if r["mean_fct_ps"] is None else r["mean_fct_ps"] / 1e9,
                     "p99_fct_ms": None if r["p99_fct_ps"] is None else r["p99_fct_ps"] / 1e9})
    drops = result.drops
    summaries.append({**head, "flows": int(result.summary["flows_total"]),
                      "counted_s": params["duration_s"] * (1 - 2 * EDGE),
                      "max_buffer_bytes": int(result.buffers["high_water_bytes"].max()),
                      "packets_dropped": int(drops["packets"].sum()) if drops.height else 0,
                      "conservation_ok": bool(result.summary["conservation_ok"]),
                      "derived_from": derived_from})


#: The data-mining flow-size tables and sampling methods the report's setup leaves open, and the load bases:
#: the sensitivity of the flow counts to them (the scenario's choice first).
COUNT_CHOICES = tuple((cdf, sampling, basis)
                      for cdf in ("datamining_vl2_hkust", "datamining_vl2_pfabric", "datamining_vl2_opera")
                      for sampling in ("linear", "step") for basis in ("wire", "payload"))
LOADS = (20, 30, 40, 50, 60, 70, 80, 90, 95)
#: The report's run length, over which its script counts flows.
RUN_S = 300


def expected_mice(cdf: str, sampling: str, basis: str, load_pct: int, seconds: float = RUN_S) -> float:
    """The expected number of the requester's flows <= 100 KB arriving in ``seconds`` of the data-mining
    scenario with flow sizes from ``cdf`` sampled by ``sampling`` and the load counted on ``basis``: the
    generator's Poisson rate (``fabricsim.workloads.flowgen.plan``, the rate the runs use) times the
    share of flows <= 100 KB of the table (same sampling)."""
    import fabricsim
    from fabricsim.workloads import flowgen
    from fabricsim.workloads.cdf import load_cdf

    doc = copy.deepcopy(load_yaml(NAME, FILES["datamining"]))
    doc["load"] = f"{load_pct}%"
    doc["load_basis"] = basis
    doc["traffic"][0].update({"cdf": cdf, "sampling": sampling})
    plan = flowgen.plan(fabricsim.from_dict(doc), 0)
    share = load_cdf(cdf).bucket_shares([100_000], method=sampling)[0][0]
    return seconds * plan["arrival_rate_per_s"] * share


def count_sensitivity() -> pl.DataFrame:
    """Expected flows <= 100 KB to the requester per 5 minutes, per flow-size table, sampling and load basis
    (rows) and load (columns), with each table's mean flow size: closed forms, no run."""
    from fabricsim.workloads.cdf import load_cdf

    rows = []
    for cdf, sampling, basis in COUNT_CHOICES:
        row = {"flow sizes": cdf, "sampling": sampling, "load basis": basis,
               "mean flow (MB)": round(load_cdf(cdf).mean(sampling) / 1e6, 2)}
        row.update({f"{load} %": round(expected_mice(cdf, sampling, basis, load)) for load in LOADS})
        rows.append(row)
    return pl.DataFrame(rows)


def _by_bucket(part: Optional[pl.DataFrame]) -> Optional[pl.DataFrame]:
    """Average FCT, one column per bucket, one row per device and load."""
    if part is None or part.height == 0:
        return None
    return part.pivot(on="bucket", index=["device", "load_pct"], values="mean_fct_ms")


def render(tables: dict[str, pl.DataFrame], full: bool) -> str:
    b = tables.get("fct/buckets")
    s = tables.get("fct/summary")
    if b is not None and b.height and "traffic" not in b.columns:
        b = b.with_columns(pl.lit("all").alias("traffic"))
    out = []
    for workload in ("datamining", "enterprise"):
        part = b.filter(pl.col("workload") == workload) if b is not None and b.height else None
        mine = part.filter(pl.col("traffic") == "requester") if part is not None else None
        pooled = part.filter(pl.col("traffic") == "all") if part is not None else None
        # A bucket with no finished flow at a point has no mean FCT to plot.
        buckets = mine.filter((pl.col("bucket") != "all") & (pl.col("flows") > 0)) if mine is not None else None
        out.append(P.test_section(
            f"Average FCT vs load: {workload}",
            P.line_figure(f"fct-{workload}", mine.filter(pl.col("bucket") == "all") if mine is not None else None,
                          "load_pct", "mean_fct_ms", xlabel="offered load (%)",
                          ylabel="average FCT, requester's flows (ms)"),
            P.line_figure(f"fct-{workload}-buckets", buckets, "load_pct", "mean_fct_ms", facet="bucket",
                          xlabel="offered load (%)", ylabel="average FCT, requester's flows (ms)", logy=True),
            P.para(
                f"Average flow completion time of the servers' answers to the requester ({workload} flow sizes) "
                "against the offered load on the requester's 10G link, over all their sizes and then per size "
                "bucket: the flows the report's script times. The answers meet at the requester's leaf port: the "
                "intelligent-buffer model keeps that queue short (AFD drops elephants' packets early in proportion "
                "to their excess rate, DPP sends the first packets of every flow ahead) while the VOQ model lets "
                "it grow to MBs, so mice wait behind elephants there. These results are driven by the AFD/DPP "
                "parameters of the presets (docs/models/devices.md) and by TCP NewReno's recovery of early drops."),
            P.line_figure(f"fct-{workload}-all-traffic",
                          pooled.filter(pl.col("bucket") == "all") if pooled is not None else None,
                          "load_pct", "mean_fct_ms", xlabel="offered load (%)",
                          ylabel="average FCT, all flows (ms)"),
            P.para("The same average over every flow of the run: the answers to the requester pooled with the "
                   "servers' traffic among themselves on leaf A, which never meets the requester's port and "
                   "outnumbers the answers (a quarter of the load from each of 24 servers)."),
            P.details_table(f"Requester's flows per bucket ({workload})",
                            mine.filter(pl.col("bucket") != "all").pivot(on="bucket", index=["device", "load_pct"],
                                                                       values="flows")
                            if mine is not None and mine.height else None),
            P.details_table(f"Average FCT per bucket (ms), requester's flows ({workload})", _by_bucket(mine)),
            P.details_table(f"Average FCT per bucket (ms), all flows ({workload})", _by_bucket(pooled))))
    counts = count_sensitivity()
    at20 = counts["20 %"]
    basis = counts.filter(pl.col("load basis") == "payload")["20 %"] / counts.filter(
        pl.col("load basis") == "wire")["20 %"]
    out.append(P.test_section(
        "Flows counted: sensitivity to the flow-size table and the load basis",
        P.para(
            "The number of flows a run counts is set by the workload generator alone: Poisson arrivals at "
            "load x 10 Gb/s / (8 x mean flow size), of which the table's share <= 100 KB are mice. The report "
            "names the data-mining workload and the load on the requester's port, not the table's digitisation, "
            "how it is sampled, or whether headers count in the load. The data-mining points use "
            f"{_datamining_cdf(full)} (the VL2_CDF of the public client/server generators that time flows one "
            "client requests from many servers, sampled by linear interpolation as they do), the load counted on "
            "the wire. The table gives the expected count of the requester's flows <= 100 KB per 5 minutes for "
            "every choice (closed forms from the generator's rate, no run; the first row is the one used): the "
            f"choices span a factor of {at20.max() / at20.min():.1f}, almost all of it the mean flow size of the "
            "three VL2 digitisations and two sampling methods; counting the load in payload bytes adds "
            f"{(basis.mean() - 1) * 100:.0f} %."),
        P.table(counts)))
    out.append(P.test_section(
        "Maximum buffer used",
        P.line_figure("max-buffer", s.with_columns(pl.col("max_buffer_bytes") / 1e6) if s is not None and s.height
                      else None, "load_pct", "max_buffer_bytes", facet="workload", xlabel="offered load (%)",
                      ylabel="maximum buffer used (MB)"),
        P.para("The largest occupancy of any switch buffer in the run: one of the leaves (the requester's, or the "
               "servers' leaf, where their traffic among themselves converges on server ports); the spines never "
               "queue. The intelligent-buffer models stay at a few MB in the data-mining runs but reach their "
               "per-port limits (5 / 10 MB) in the enterprise runs at the highest loads, where their drops grow; "
               "the deep buffer's peak grows with the run length, so 2 s runs do not show its largest use."),
        P.table(s)))
    return "".join(out)


# The report's words, read as numbers (the same reading for every claim):
#: "barely distinguishable", "~=", "a few percent apart": within 10 % of each other.
NEAR = 0.10
#: "similar" buffer use: within the verdict rule's own tolerance.
SIMILAR = TOLERANCE
#: The report's switches and the device models that stand for them (by their documented per-port buffer).
DEVICES = {"nexus_9272q": "nexus-ib-5mb", "nexus_92160yc_x": "nexus-ib-10mb", "arista_7280se_72": "jericho-deep"}
NEXUS = ("nexus-ib-5mb", "nexus-ib-10mb")
DEEP = "jericho-deep"
SHORT = {"nexus-ib-5mb": "ib-5mb", "nexus-ib-10mb": "ib-10mb", DEEP: "deep"}
#: The claims' flow-size buckets as the tables label them.
SIZES = {"lt100KB": "<100 KB", "100KB_1MB": "100 KB-1 MB", "1MB_10MB": "1-10 MB", "gt10MB": ">10 MB", "all": "all"}


def _scale(full: bool) -> Optional[str]:
    return None if full else "2 s runs, first and last 5 % of arrivals left out (the report: 5 minutes)"


def _curve(tables: Mapping[str, Any], device: str, workload: str, size: str, y: str = "mean_fct_ms"
           ) -> dict[int, float]:
    """``{load_pct: y}`` of the requester's flows of one device, workload and bucket (KeyError when missing)."""
    t = frame(tables, "fct/buckets")
    if "traffic" not in t.columns:
        raise KeyError("table fct/buckets has no requester's rows (column traffic)")
    t = t.filter((pl.col("traffic") == "requester") & (pl.col("device") == device)
                 & (pl.col("workload") == workload) & (pl.col("bucket") == SIZES[size]))
    out = {int(r["load_pct"]): float(r[y]) for r in t.iter_rows(named=True) if r[y] is not None}
    if not out:
        raise KeyError(f"no {SIZES[size]} FCT of {device}, {workload}")
    return out


def _ratios(tables: Mapping[str, Any], workload: str, size: str, loads: Optional[list[int]] = None,
            nexus: tuple[str, ...] = NEXUS) -> dict[tuple[str, int], float]:
    """Deep-buffer FCT / Nexus FCT, ``{(nexus, load): ratio}`` at ``loads`` (every load both have when None)."""
    deep = _curve(tables, DEEP, workload, size)
    out = {}
    for n in nexus:
        ib = _curve(tables, n, workload, size)
        for load in loads if loads is not None else sorted(set(deep) & set(ib)):
            if load not in deep or load not in ib:
                raise KeyError(f"no {SIZES[size]} FCT at {load} % load ({workload})")
            out[(n, load)] = deep[load] / ib[load]
    return out


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _span(r: Mapping[tuple[str, int], float], fmt: str = "{:.2f}") -> str:
    """The range of the values ``r`` and where its ends are."""
    lo, hi = min(r, key=r.get), max(r, key=r.get)
    if len(r) == 1:
        return f"{fmt.format(r[lo])} ({SHORT[lo[0]]}, {lo[1]} %)"
    return (f"{fmt.format(r[lo])} ({SHORT[lo[0]]}, {lo[1]} %) to {fmt.format(r[hi])} "
            f"({SHORT[hi[0]]}, {hi[1]} %)")


# --- data-mining table of the Nexus 92160YC-X (< 100 KB) --------------------------------------------------------

def _datamining_cdf(full: bool) -> str:
    """The flow-size table the data-mining points use (``datamining_cdf`` of the sweep's settings)."""
    return sweep_definition(NAME)["tests"]["fct"]["full" if full else "default"]["settings"]["datamining_cdf"]


def _mice_fct(load: int):
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        v = _curve(tables, DEVICES["nexus_92160yc_x"], "datamining", "lt100KB")[load]
        return Simulated(v, text=f"{v:.3g} ms", scale=_scale(full))
    return f


def _mice_flows(load: int):
    """The requester's flows < 100 KB per 5 minutes: at the report's scale those whose arrivals the run
    counts (270 s, scaled to 300 s); at the default scale the generator's expected count over 5 minutes
    (:func:`expected_mice`), the run's count in its 1.8 s beside it (about 28 flows at 20 % load, a
    Poisson count whose noise, +-19 %, the scaling to 5 minutes keeps)."""
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        done = _curve(tables, DEVICES["nexus_92160yc_x"], "datamining", "lt100KB", "flows")[load]
        left = _curve(tables, DEVICES["nexus_92160yc_x"], "datamining", "lt100KB", "incomplete").get(load, 0.0)
        t = frame(tables, "fct/summary")
        window = t.filter((pl.col("device") == DEVICES["nexus_92160yc_x"]) & (pl.col("workload") == "datamining")
                          & (pl.col("load_pct") == load))["counted_s"]
        if window.len() == 0:
            raise KeyError(f"no summary row at {load} % load")
        seconds = float(window[0])
        per_5min = (done + left) * RUN_S / seconds
        if full:
            return Simulated(per_5min, text=f"{per_5min:,.0f} ({done + left:,.0f} in {seconds:g} s)")
        expected = expected_mice(_datamining_cdf(full), "linear", "wire", load)
        return Simulated(expected, text=f"{expected:,.0f} (the run: {done + left:,.0f} in {seconds:g} s, "
                                        f"{per_5min:,.0f} per 5 minutes)",
                         scale=f"the generator's expected count over 5 minutes; the run counts {seconds:g} s, whose "
                               "Poisson noise scaled to 5 minutes would swamp it")
    return f


# --- buffer use ---------------------------------------------------------------------------------------------------

def _peak(tables: Mapping[str, Any], device: str, workload: Optional[str] = None) -> float:
    """The largest buffer occupancy of ``device`` over every run (of ``workload``), in MB."""
    t = frame(tables, "fct/summary").filter(pl.col("device") == device)
    if workload is not None:
        t = t.filter(pl.col("workload") == workload)
    if t.height == 0:
        raise KeyError(f"no summary rows of {device}")
    return float(t["max_buffer_bytes"].max()) / 1e6


def _buffer_scale(full: bool, device: str) -> Optional[str]:
    if full:
        return None
    if device == DEEP:
        return ("largest over the 2 s runs, which cannot fill the deep buffer: its occupancy still grows with the "
                "run length (the report: 5-minute runs)")
    return "largest over the 2 s runs (the report: 5-minute runs)"


def _buffer_max(device: str):
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        v = _peak(tables, device)
        return Simulated(v, text=f"{v:.3g} MB", scale=_buffer_scale(full, device))
    return f


def _buffer_ratio(nexus: str):
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        deep, ib = _peak(tables, DEEP), _peak(tables, nexus)
        return Simulated(deep / ib, holds=deep > ib, text=f"{deep / ib:.3g} ({deep:.3g} / {ib:.3g} MB)",
                         scale=_buffer_scale(full, DEEP))
    return f


def _buffer_use(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """Per device, the enterprise runs' peak within SIMILAR of the data-mining runs' peak."""
    r = {d: _peak(tables, d, "enterprise") / _peak(tables, d, "datamining") for d in (*NEXUS, DEEP)}
    return Simulated(holds=all(abs(x - 1) <= SIMILAR for x in r.values()),
                     text="enterprise / data-mining peak: " + ", ".join(f"{SHORT[d]} {x:.2f}" for d, x in r.items()),
                     scale=_buffer_scale(full, DEEP))


# --- data mining --------------------------------------------------------------------------------------------------

def _dm_low_load(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """At 20 and 30 % the three devices' average FCT within NEAR of each other."""
    spread = {}
    for load in (20, 30):
        v = [_curve(tables, d, "datamining", "all")[load] for d in (*NEXUS, DEEP)]
        spread[load] = max(v) / min(v)
    return Simulated(holds=all(x - 1 <= NEAR for x in spread.values()),
                     text="largest / smallest of the three: " + ", ".join(f"{x:.2f} at {k} %" for k, x in spread.items()),
                     scale=_scale(full))


def _dm_cisco_pair(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """nexus-ib-5mb's average FCT within NEAR of nexus-ib-10mb's at every load."""
    a, b = (_curve(tables, n, "datamining", "all") for n in NEXUS)
    r = {("nexus-ib-5mb", load): a[load] / b[load] for load in sorted(set(a) & set(b))}
    return Simulated(holds=bool(r) and all(abs(x - 1) <= NEAR for x in r.values()),
                     text=f"ib-5mb / ib-10mb {_span(r)}", scale=_scale(full))


def _dm_above50(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """Deep above both Nexus at 60..95 %, and the gap at 95 % wider than at 60 %."""
    r = _ratios(tables, "datamining", "all", [60, 70, 80, 90, 95])
    wider = all(r[(n, 95)] > r[(n, 60)] for n in NEXUS)
    return Simulated(holds=all(x > 1 for x in r.values()) and wider,
                     text=f"deep / Nexus {_span(r)}; at 60 %: " + ", ".join(f"{r[(n, 60)]:.2f}" for n in NEXUS)
                          + ", at 95 %: " + ", ".join(f"{r[(n, 95)]:.2f}" for n in NEXUS),
                     scale=_scale(full))


def _excess(workload: str, size: str, loads: Optional[list[int]]):
    """``deep / Nexus - 1`` in %, the mean over the loads and both Nexus models."""
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        r = {k: (x - 1) * 100 for k, x in _ratios(tables, workload, size, loads).items()}
        v = sum(r.values()) / len(r)
        return Simulated(v, holds=all(x > 0 for x in r.values()),
                         text=f"{v:.1f} % (mean; {_span(r, '{:.1f} %')})", scale=_scale(full))
    return f


def _saved(workload: str, size: str, loads: Optional[list[int]]):
    """``1 - Nexus / deep`` in %, the mean over the loads and both Nexus models."""
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        r = {k: (1 - 1 / x) * 100 for k, x in _ratios(tables, workload, size, loads).items()}
        v = sum(r.values()) / len(r)
        return Simulated(v, holds=all(x > 0 for x in r.values()),
                         text=f"{v:.1f} % (mean; {_span(r, '{:.1f} %')})", scale=_scale(full))
    return f


def _dm_cisco_flat(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """The mean over every load and both Nexus models of their < 100 KB FCT."""
    r = {(n, load): x for n in NEXUS for load, x in _curve(tables, n, "datamining", "lt100KB").items()}
    v = sum(r.values()) / len(r)
    return Simulated(v, text=f"{v:.3g} ms (mean; {_span(r, '{:.3g} ms')})", scale=_scale(full))


def _ratio_geomean(workload: str, size: str, loads: Optional[list[int]], nexus: tuple[str, ...] = NEXUS):
    """Deep / Nexus FCT, the geometric mean over the loads (and Nexus models): orders of magnitude read on a
    log scale."""
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        r = _ratios(tables, workload, size, loads, nexus)
        v = _geomean(list(r.values()))
        return Simulated(v, holds=all(x > 1 for x in r.values()), text=f"{v:.3g} (geometric mean; {_span(r)})",
                         scale=_scale(full))
    return f


def _ratio_least(workload: str, size: str, loads: list[int]):
    """Deep / Nexus FCT, the smallest over the loads and both Nexus models ("at least", "more than")."""
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        r = _ratios(tables, workload, size, loads)
        v = min(r.values())
        return Simulated(v, holds=v > 1, text=f"{v:.3g} (smallest; {_span(r)})", scale=_scale(full))
    return f


def _dm_buffer_trend(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """Mean < 100 KB FCT over the loads, in the order of the buffer sizes (5 MB, 10 MB per port, deep)."""
    v = {d: sum(c.values()) / len(c) for d in (*NEXUS, DEEP)
         for c in [_curve(tables, d, "datamining", "lt100KB")]}
    return Simulated(holds=v["nexus-ib-5mb"] <= v["nexus-ib-10mb"] < v[DEEP],
                     text="mean over the loads: " + ", ".join(f"{SHORT[d]} {x:.3g} ms" for d, x in v.items()),
                     scale=_scale(full))


def _dm_narrowing(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """Deep / Nexus for 1-10 MB below that for 100 KB-1 MB, and not below 1 (no gain from the deep buffer)."""
    mid = _geomean(list(_ratios(tables, "datamining", "100KB_1MB").values()))
    big = _geomean(list(_ratios(tables, "datamining", "1MB_10MB").values()))
    return Simulated(holds=big < mid and big >= 1,
                     text=f"deep / Nexus, geometric mean over the loads: 1-10 MB {big:.2f}, 100 KB-1 MB {mid:.2f}",
                     scale=_scale(full))


def _similar(workload: str, size: str):
    """Deep / Nexus within NEAR of 1 (geometric mean over the loads, each Nexus model)."""
    def f(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
        r = _ratios(tables, workload, size)
        g = {n: _geomean([x for (m, _), x in r.items() if m == n]) for n in NEXUS}
        return Simulated(holds=all(abs(x - 1) <= NEAR for x in g.values()),
                         text="deep / Nexus, geometric mean over the loads: "
                              + ", ".join(f"{SHORT[n]} {x:.2f}" for n, x in g.items()) + f" (per load {_span(r)})",
                         scale=_scale(full))
    return f


# --- enterprise ---------------------------------------------------------------------------------------------------

def _ent_trend(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """Deep / Nexus average FCT at the highest load above that at the lowest, for both Nexus models."""
    r = _ratios(tables, "enterprise", "all")
    loads = sorted({load for _, load in r})
    lo, hi = loads[0], loads[-1]
    return Simulated(holds=all(r[(n, hi)] > r[(n, lo)] for n in NEXUS),
                     text=f"deep / Nexus at {lo} %: " + ", ".join(f"{r[(n, lo)]:.2f}" for n in NEXUS)
                          + f"; at {hi} %: " + ", ".join(f"{r[(n, hi)]:.2f}" for n in NEXUS),
                     scale=_scale(full))


def _ent_all_loads(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    r = _ratios(tables, "enterprise", "1MB_10MB")
    return Simulated(holds=all(x > 1 for x in r.values()), text=f"deep / Nexus {_span(r)}", scale=_scale(full))


# --- summary claims -----------------------------------------------------------------------------------------------

def _summary_congestion(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """Nexus faster on average (all flows) and for < 100 KB and 100 KB-1 MB in both workloads (deep / Nexus
    above 1, geometric mean over the loads), elephants (> 10 MB, data mining) within NEAR."""
    g = {(w, s): _geomean(list(_ratios(tables, w, s).values()))
         for w in ("datamining", "enterprise") for s in ("all", "lt100KB", "100KB_1MB")}
    big = _geomean(list(_ratios(tables, "datamining", "gt10MB").values()))
    holds = all(x > 1 for x in g.values()) and abs(big - 1) <= NEAR
    short = {"datamining": "dm", "enterprise": "ent"}
    return Simulated(holds=holds, text="deep / Nexus, geometric mean over the loads: "
                     + ", ".join(f"{short[w]} {SIZES[s]} {x:.2f}" for (w, s), x in g.items())
                     + f"; dm >10 MB {big:.2f}", scale=_scale(full))


def _summary_mice_gain(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """Deep / Nexus < 100 KB FCT at 95 % at least 10 in both workloads, and elephants (> 10 MB, data mining)
    not slower on the Nexus (deep / Nexus not below 1 - NEAR)."""
    mice = {w: min(_ratios(tables, w, "lt100KB", [95]).values()) for w in ("datamining", "enterprise")}
    big = _geomean(list(_ratios(tables, "datamining", "gt10MB").values()))
    return Simulated(holds=all(x >= 10 for x in mice.values()) and big >= 1 - NEAR,
                     text=f"deep / Nexus < 100 KB at 95 %: data mining {mice['datamining']:.3g}, enterprise "
                          f"{mice['enterprise']:.3g} (smaller of the two Nexus); > 10 MB {big:.2f}",
                     scale=_scale(full))


def _summary_mice_share(tables: Mapping[str, Any], full: bool) -> Optional[Simulated]:
    """The workload with more requester's flows < 100 KB (summed over the loads) gains more on the Nexus
    (deep / Nexus average FCT - 1, mean over the loads and both Nexus models)."""
    mice = {w: sum(_curve(tables, NEXUS[0], w, "lt100KB", "flows").values()) for w in ("datamining", "enterprise")}
    gain = {w: sum(x - 1 for x in r.values()) / len(r) * 100
            for w in ("datamining", "enterprise") for r in [_ratios(tables, w, "all")]}
    more, fewer = sorted(mice, key=mice.get, reverse=True)
    return Simulated(holds=mice[more] > mice[fewer] and gain[more] > gain[fewer],
                     text=f"< 100 KB flows: data mining {mice['datamining']:,.0f}, enterprise {mice['enterprise']:,.0f}; "
                          f"deep / Nexus - 1: data mining {gain['datamining']:.1f} %, enterprise "
                          f"{gain['enterprise']:.1f} %", scale=_scale(full))


DOCUMENTED = ("a vendor's documented buffer size, not a measurement: the device models take it as an input "
              "(nexus-ib-5mb / nexus-ib-10mb: 5 / 10 MB per port; jericho-deep: 4 GB with a 5 ms limit per VOQ; "
              "docs/models/devices.md), so the simulation has nothing to compare it with")
HIGH = [70, 80, 90, 95]

CLAIMS: dict[str, Any] = {
    **{f"fct.dm.lt100KB.fct_ms.n92160.load{load}": _mice_fct(load) for load in (20, 30, 40, 50, 60, 70, 80, 90, 95)},
    **{f"fct.dm.lt100KB.flows.n92160.load{load}": _mice_flows(load) for load in (20, 30, 40, 50, 60, 70, 80, 90, 95)},
    "fct.buffer_max.n9272q": _buffer_max(DEVICES["nexus_9272q"]),
    "fct.buffer_max.n92160": _buffer_max(DEVICES["nexus_92160yc_x"]),
    "fct.buffer_max.a7280": _buffer_max(DEEP),
    "fct.buffer_documented.n9272q": DOCUMENTED,
    "fct.buffer_documented.n92160": DOCUMENTED,
    "fct.buffer_documented.a7280": DOCUMENTED,
    "fct.buffer_documented.ratio.a7280_vs_n9272q": DOCUMENTED,
    "fct.buffer_documented.ratio.a7280_vs_n92160": DOCUMENTED,
    "fct.buffer_max.ratio.a7280_vs_n9272q": _buffer_ratio(DEVICES["nexus_9272q"]),
    "fct.buffer_max.ratio.a7280_vs_n92160": _buffer_ratio(DEVICES["nexus_92160yc_x"]),
    "fct.dm.all.low_load": _dm_low_load,
    "fct.dm.all.cisco_pair": _dm_cisco_pair,
    "fct.dm.all.above50": _dm_above50,
    "fct.dm.all.excess_pct.gt60": _excess("datamining", "all", HIGH),
    "fct.dm.lt100KB.cisco_flat": _dm_cisco_flat,
    "fct.dm.lt100KB.ratio.gt40": _ratio_geomean("datamining", "lt100KB", [50, 60, 70, 80, 90, 95],
                                                (DEVICES["nexus_92160yc_x"],)),
    "fct.dm.lt100KB.ratio.load95": _ratio_geomean("datamining", "lt100KB", [95]),
    "fct.dm.lt100KB.buffer_trend": _dm_buffer_trend,
    "fct.dm.100KB_1MB.ratio.load30_70": _ratio_geomean("datamining", "100KB_1MB", [30, 40, 50, 60, 70]),
    "fct.dm.100KB_1MB.ratio.ge80": _ratio_least("datamining", "100KB_1MB", [80, 90, 95]),
    "fct.dm.1MB_10MB.narrowing": _dm_narrowing,
    "fct.dm.gt10MB.similar": _similar("datamining", "gt10MB"),
    "fct.ent.all.better_pct.saved": _saved("enterprise", "all", None),
    "fct.ent.all.better_pct.excess": _excess("enterprise", "all", None),
    "fct.ent.all.trend": _ent_trend,
    "fct.ent.lt100KB.better_pct.load20.saved": _saved("enterprise", "lt100KB", [20]),
    "fct.ent.lt100KB.better_pct.load20.excess": _excess("enterprise", "lt100KB", [20]),
    "fct.ent.lt100KB.ratio.ge70": _ratio_least("enterprise", "lt100KB", HIGH),
    "fct.ent.100KB_1MB.better_pct.saved": _saved("enterprise", "100KB_1MB", None),
    "fct.ent.100KB_1MB.better_pct.excess": _excess("enterprise", "100KB_1MB", None),
    "fct.ent.1MB_10MB.better_pct.load95.saved": _saved("enterprise", "1MB_10MB", [95]),
    "fct.ent.1MB_10MB.better_pct.load95.excess": _excess("enterprise", "1MB_10MB", [95]),
    "fct.ent.1MB_10MB.all_loads": _ent_all_loads,
    "fct.ent.gt10MB.similar": ("the enterprise flow sizes here (enterprise_imc10, Benson et al., IMC 2010) have no "
                               "flow above 10 MB; the report's enterprise distribution is published as a chart only"),
    "fct.ent.buffer_use": _buffer_use,
    "fct.method.run_length": ("needs the same points at two run lengths; the sweep runs one length per scale "
                              "(2 s by default, the report's 5 minutes with --full)"),
    "fct.summary.congestion": _summary_congestion,
    "fct.summary.mice_gain": _summary_mice_gain,
    "fct.summary.mice_share": _summary_mice_share,
}


#: The report's servers (Cisco UCS C200, Linux, a script timing each flow) add a stack and interrupt time that
#: the ideal hosts of the prediction do not have; the report gives neither their NIC nor its interrupt
#: moderation. The space reruns the data-mining points of every device with a kernel stack and NIC
#: interrupt moderation, from the nearest documented setting outward.
HOSTS = (
    ("the hosts run the Linux kernel stack (linux-kernel preset) with static interrupt moderation of 10 us or "
     "5 frames (the ConnectX documented static setting, docs/models/host.md)",
     {"network.host.model": {"preset": "linux-kernel", "interrupt": {"usecs": "10us", "frames": 5}}}),
    ("the hosts run the Linux kernel stack (linux-kernel preset) with every receive interrupt delayed by 50 us "
     "(the interval Linux's ixgbe driver for Intel 82599 / X520 10G NICs starts each receive vector at under its "
     "default dynamic moderation: IXGBE_20K_ITR, ixgbe_alloc_q_vector)",
     {"network.host.model": {"preset": "linux-kernel", "interrupt": {"usecs": "50us", "frames": 0}}}),
    ("the hosts run the Linux kernel stack (linux-kernel preset) with every receive interrupt delayed by 96 us "
     "(the upper limit of Emulex's adaptive interrupt coalescing for its 10G adapters, Emulex Drivers 10.2 for "
     "Linux user manual, which a steadily loaded port reaches)",
     {"network.host.model": {"preset": "linux-kernel", "interrupt": {"usecs": "96us", "frames": 0}}}),
)
ASSUMPTIONS = (
    Assumption("hosts' stack and interrupt moderation", "fct", {"workload": "datamining"}, HOSTS,
               why="the report's servers' NIC, driver settings and kernel are not stated"),
)


REPORT = Report(
    name=NAME,
    title="miercom-buffers: intelligent buffer vs deep buffer under data-center load",
    summary=("Leaf-spine (2 spines, 2 leaves with 4x40G uplinks), 24 servers on 10G answering one requester on "
             "10G and exchanging traffic among themselves; data-mining and enterprise flow sizes, Poisson arrivals, "
             "TCP NewReno, offered load 20..95% on the requester's link. The report's nexus_9272q (5 MB per port) "
             "is nexus-ib-5mb, its nexus_92160yc_x (10 MB per port) nexus-ib-10mb, its arista_7280se_72 "
             "jericho-deep; the FCT claims are read from the servers' answers to the requester."),
    devices=("nexus-ib-5mb", "nexus-ib-10mb", "jericho-deep"),
    tests=(Test("fct", "Average FCT overall and per bucket vs load, flow counts, max buffer",
                grid_points(NAME, "fct"), fct, seconds=6.0),),
    render=render,
    reductions=(
        "2 s of simulated traffic per point (the report: 5 minutes); the first and last 5% of the run are left out "
        "of the FCT statistics. Elephants (>10 MB) are few in 2 s, so their bucket is noisy, and 2 s do not fill "
        "the deep buffer (its largest occupancy grows with the run length).",
        "All four switches of the fabric use the compared device model (spines never queue in this topology).",
        "The two Nexus models differ only in their per-port cap (5 and 10 MB): a point runs the 5 MB one, and the "
        "10 MB one only where the 5 MB run's buffers came within a frame of 5 MB; elsewhere neither cap dropped a "
        "packet, the two runs are the same event for event, and the 10 MB rows are the 5 MB run's (column "
        "derived_from of the summary).",
    ),
    # The golden snapshot: every device and workload at 20% load (about 1-2 s of CPU per point; the whole
    # default job takes about 5 CPU-minutes).
    golden_tests=("fct",),
    golden_select=lambda test, params: params["load_pct"] == 20,
    claims=CLAIMS,
    assumptions=ASSUMPTIONS,
)
