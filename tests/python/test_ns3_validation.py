"""TCP against ns-3 3.44 on the same star experiments.

Two layers:

- against ns-3 results recorded with ``python -m fabricsim.validation.ns3``
  (``tests/ns3/results/*.json``): always run;
- against ns-3 run live in this process: runs when the ``ns3`` package is
  installed (the test extras install it on Linux x86-64), skipped otherwise.

Each case runs without SACK (ns-3 ``Sack = false``, classic recovery; the
fabricsim twin is the ``rfc`` TCP profile) and with SACK (ns-3 ``Sack = true``;
the twin is :data:`fabricsim.validation.NS3_SACK_TCP`: RFC 6675 recovery with
ns-3's choices, no RACK or tail loss probes, which ns-3 lacks). With SACK,
NewReno uses ns-3's classic recovery: ns-3 3.44's PRR (its default) stalls one
flow of the 16-sender incast in repeated timeouts (recorded in
``incast16x5_newreno_sack_prr.json``, docs/validation/ns3-results.md); CUBIC,
DCTCP and the dumbbell use PRR on both sides.

Tolerances: job completion time (JCT, the last flow's FCT) within 5%; for
NewReno, drops within 5% and the median and 10th/90th percentile of per-flow
FCTs within 10%. For CUBIC only the JCT is compared: its slow-start exit
differs (without SACK fabricsim's RFC 9438 CUBIC has no HyStart while ns-3
runs it; with SACK both run classic HyStart, whose detections differ in
detail). ns-3's DCTCP with delayed ACKs stalls 7 of 16 flows until a 200 ms
timeout (its window is not rounded to whole segments and the last delayed ACK
never comes); DCTCP is compared on the DelAckCount = 1 configuration, where
ns-3 does not stall. H-TCP (ns-3's ``TcpHtcp``, which has no RTT scaling: the
twin turns it off) is compared on a long path without delayed ACKs, JCT only:
ns-3 grows the window by ``alpha / cwnd`` per ACK whatever the ACK covers, so
with delayed ACKs its increase is half of Linux's ``alpha`` per RTT; its drop
count is about half of fabricsim's (the overshoot of each congestion event
differs).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import fabricsim
from fabricsim.validation import star_scenario

RESULTS = Path(__file__).resolve().parents[1] / "ns3" / "results"

CASES: dict[str, dict[str, Any]] = {
    "incast16x5_newreno": dict(senders=16, bytes_per_flow=5_000_000, cc="newreno"),
    "incast16x5_cubic": dict(senders=16, bytes_per_flow=5_000_000, cc="cubic"),
    "incast16x5_dctcp_delack1": dict(senders=16, bytes_per_flow=5_000_000, cc="dctcp", k_packets=65, delack_count=1),
    "dumbbell4x50_newreno": dict(senders=4, bytes_per_flow=50_000_000, cc="newreno"),
    "incast16x50_newreno": dict(senders=16, bytes_per_flow=50_000_000, cc="newreno"),
}
SACK = {"sack": True, "recovery": "prr"}
CASES.update(
    {
        "incast16x5_newreno_sack": dict(CASES["incast16x5_newreno"], sack=True, recovery="classic"),
        "incast16x5_cubic_sack": dict(CASES["incast16x5_cubic"], **SACK),
        "incast16x5_dctcp_delack1_sack": dict(CASES["incast16x5_dctcp_delack1"], **SACK),
        "dumbbell4x50_newreno_sack": dict(CASES["dumbbell4x50_newreno"], **SACK),
        "incast16x50_newreno_sack": dict(CASES["incast16x50_newreno"], sack=True, recovery="classic"),
        # H-TCP on a long path: 2 flows, 100 Mb/s, RTT 40 ms, 111-packet buffer (BDP / 3).
        "dumbbell2x100_htcp_long_delack1_sack": dict(
            senders=2, bytes_per_flow=100_000_000, cc="htcp", rate="100Mbps", delay="10ms", queue_packets=111,
            window_bytes=8_000_000, delack_count=1, **SACK),
    }
)


def fabricsim_run(case: str) -> dict[str, Any]:
    result = fabricsim.run(fabricsim.Scenario.from_dict(star_scenario(**CASES[case], name=case)))
    assert result.summary["conservation_ok"]
    fct = (result.flows["fct_ps"].cast(pl.Float64) * 1e-12).to_numpy()
    return {"fct": fct, "jct": fct.max(), "drops": result.summary["packets_dropped"]}


def compare(case: str, ours: dict[str, Any], ref_fct: np.ndarray, ref_drops: int) -> None:
    ref_jct = ref_fct.max()
    assert ours["jct"] == pytest.approx(ref_jct, rel=0.05), f"{case}: JCT {ours['jct']} vs ns-3 {ref_jct}"
    if "newreno" in case:
        for q in (10, 50, 90):
            a, b = np.percentile(ours["fct"], q), np.percentile(ref_fct, q)
            assert a == pytest.approx(b, rel=0.10), f"{case}: FCT p{q} {a} vs ns-3 {b}"
        assert ours["drops"] == pytest.approx(ref_drops, rel=0.05, abs=2)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_recorded_ns3(core, case):
    ref = json.loads((RESULTS / f"{case}.json").read_text())
    ref_fct = np.array([f["fct_s"] for f in ref["flows"]])
    compare(case, fabricsim_run(case), ref_fct, ref["bottleneck_drops"])


needs_ns3 = pytest.mark.skipif(importlib.util.find_spec("ns") is None, reason="ns-3 (pip install ns3) is not installed")


@needs_ns3
@pytest.mark.parametrize(
    "case",
    [
        "incast16x5_newreno",
        "dumbbell4x50_newreno",
        "incast16x5_dctcp_delack1",
        "incast16x5_newreno_sack",
        "incast16x5_dctcp_delack1_sack",
        # 20 s of simulated time in ns-3: about 20 s of CPU.
        pytest.param("dumbbell2x100_htcp_long_delack1_sack", marks=pytest.mark.slow),
    ],
)
def test_matches_live_ns3(core, case):
    from fabricsim.validation import ns3

    kw = dict(CASES[case])
    senders = kw.pop("senders")
    delack = kw.pop("delack_count", 2)
    extra = {"ns3::TcpSocket::DelAckCount": str(delack)} if delack != 2 else None
    if case.startswith("dumbbell"):
        ref = ns3.dumbbell(flows=senders, extra_defaults=extra, **kw)
    else:
        ref = ns3.incast(senders=senders, extra_defaults=extra, **kw)
    ref_fct = np.array([f["fct_s"] for f in ref["flows"]])
    compare(case, fabricsim_run(case), ref_fct, ref["bottleneck_drops"])
