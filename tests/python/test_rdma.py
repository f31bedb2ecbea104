"""RoCEv2 + PFC from Python: the R1.2 mixed scenario and the pauses table."""

from pathlib import Path

import fabricsim
from fabricsim.schema import load, loads

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_tcp_rocev2_mixed_keeps_roce_lossless():
    result = fabricsim.run(load(SCENARIOS / "tcp-rocev2-mixed.yaml"))
    s = result.summary
    assert s["conservation_ok"] and s["buffer_accounting_ok"] and s["drained"]
    assert s["flows_completed"] == s["flows_total"]
    assert s["rdma_qps_completed"] == 140 and s["rdma_retransmits"] == 0
    # Every drop is in the lossy TCP class.
    assert result.drops.height > 0 and set(result.drops["class"].to_list()) == {0}
    rdma = result.flows.filter(result.flows["kind"] == "rdma")
    assert rdma.height == 140 and rdma["fct_ps"].null_count() == 0
    assert {"nacks", "cnps", "messages_completed", "msg_time_mean_ps"} <= set(rdma.columns)
    assert set(result.pauses.columns) >= {"node", "port", "priority", "xoff_sent", "paused_ps"}


def test_pfc_incast_reports_pauses_and_headroom_drops():
    text = """
duration: 2ms
network:
  switch:
    buffer: {model: shared, size: 4MB}
    pfc: {classes: [3], xoff: 20KB, headroom: 4KB}
topology: {kind: star, hosts: 3, link: {rate: 100Gbps, delay: 1us}}
roce: {dcqcn: {enabled: false}, ack_every: 4, rto: 1ms}  # lost tails are repaired by the timeout
traffic:
  - {kind: rdma_write, src: [h1, h2], dst: h0, messages: 2, message_size: 1MB}
"""
    result = fabricsim.run(loads(text))
    assert result.summary["conservation_ok"] and result.summary["rdma_qps_completed"] == 2
    assert set(result.drops["reason"].to_list()) == {"headroom_overflow"}
    sw = result.pauses.filter(result.pauses["node"] == "sw0")
    assert sw["xoff_sent"].sum() > 0
    hosts = result.pauses.filter(result.pauses["node"] != "sw0")
    assert hosts["xoff_received"].sum() > 0 and hosts["paused_ps"].sum() > 0


LOSSY = """
duration: 10ms
seed: 3
topology: {kind: star, hosts: 3, link: {rate: 100Gbps, delay: 1us, loss: 0.002}}
roce: {dcqcn: {enabled: false}, rto: 200us, recovery: RECOVERY}
traffic:
  - {kind: rdma_write, src: [h1, h2], dst: h0, messages: 4, message_size: 1MB}
"""


def test_selective_repeat_resends_the_lost_packets_where_go_back_n_resends_the_window():
    """Two QPs over links losing 0.2 % of frames: both recoveries complete
    with every account balanced; selective repeat resends no more packets
    than frames were lost (ACKs and NACKs are among them) and finishes
    sooner; go-back-N resends what followed each loss."""
    runs = {r: fabricsim.run(loads(LOSSY.replace("RECOVERY", r))) for r in ("selective_repeat", "go_back_n")}
    for result in runs.values():
        s = result.summary
        assert s["conservation_ok"] and s["buffer_accounting_ok"] and s["drained"]
        assert s["rdma_qps_completed"] == 2
    sr, gbn = runs["selective_repeat"].summary, runs["go_back_n"].summary
    assert 0 < sr["rdma_retransmits"] <= sr["packets_dropped"]
    assert gbn["rdma_retransmits"] > 5 * sr["rdma_retransmits"]
    assert max(runs["selective_repeat"].flows["fct_ps"]) < max(runs["go_back_n"].flows["fct_ps"])


def test_selective_repeat_is_resolved_only_when_chosen_and_its_threshold_is_checked():
    import pytest
    from fabricsim import ScenarioError

    plain = loads(LOSSY.replace(", recovery: RECOVERY", "")).to_resolved()["roce"]
    assert "recovery" not in plain and "dupthresh" not in plain
    chosen = loads(LOSSY.replace("RECOVERY", "selective_repeat, dupthresh: 16")).to_resolved()["roce"]
    assert (chosen["recovery"], chosen["dupthresh"]) == ("selective_repeat", 16)
    with pytest.raises(ScenarioError) as err:
        loads(LOSSY.replace("RECOVERY", "selective_repeat, dupthresh: 0"))
    assert err.value.issues[0].path == "roce.dupthresh"
    with pytest.raises(ScenarioError, match="go_back_n, selective_repeat"):
        loads(LOSSY.replace("RECOVERY", "selective"))


def test_hpcc_runs_from_yaml_with_telemetry_and_keeps_the_incast_queue_short():
    """`roce.cc: hpcc` (a controller the core registers itself) on a 2:1
    incast at 100G: no drop, both QPs complete, and the bottleneck's mean
    queue delay is a small fraction of DCQCN's on the same run."""
    text = """
duration: 5ms
network:
  switch:
    buffer: {model: shared, size: 12MB}
    ecn: {kmin: 5KB, kmax: 200KB, pmax: 0.01}
topology: {kind: star, hosts: 3, link: {rate: 100Gbps, delay: 1us}}
roce: {cc: CC}
traffic:
  - {kind: rdma_write, src: [h1, h2], dst: h0, messages: 1, message_size: 20MB}
"""
    runs = {cc: fabricsim.run(loads(text.replace("CC", cc))) for cc in ("hpcc", "dcqcn")}
    for result in runs.values():
        s = result.summary
        assert s["conservation_ok"] and s["buffer_accounting_ok"] and s["drained"]
        assert s["rdma_qps_completed"] == 2 and s["packets_dropped"] == 0
    delay = {cc: r.links["queue_delay_mean_ps"].max() for cc, r in runs.items()}
    assert delay["hpcc"] * 10 < delay["dcqcn"], delay
    from fabricsim.schema.extensions import rate_controllers
    assert "hpcc" in rate_controllers()


def test_a_run_ends_with_its_last_queue_pair_and_no_finished_qp_holds_it_open():
    """Two 1 MB writes into one 100G port: once every QP is done, its last retransmission deadline
    (67 ms ahead) neither counts as an event nor keeps the drain going, with any controller; the run
    ends at the last write's completion."""
    for cc in ("dcqcn", "hpcc", "nscc"):
        text = f"""
duration: 50us
topology: {{kind: star, hosts: 3, link: {{rate: 100Gbps, delay: 1us}}}}
roce: {{cc: {cc}, recovery: selective_repeat}}
traffic:
  - {{kind: rdma_write, src: [h1, h2], dst: h0, message_size: 1MB}}
"""
        result = fabricsim.run(loads(text), progress=False)
        s = result.summary
        assert s["conservation_ok"] and s["flows_completed"] == 2, cc
        last = int(result.flows["end_ps"].max())
        if cc != "dcqcn":  # DCQCN's second write loses its tail to the shared buffer and waits out a timeout
            assert last < 1_000_000_000, (cc, last)
        assert s["sim_time_ps"] == last, (cc, s["sim_time_ps"], last)
