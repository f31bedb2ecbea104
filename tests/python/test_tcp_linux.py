"""TCP profiles end to end: Linux's slow-start exit and loss recovery against the RFC baseline.

- HyStart++ (RFC 9406) leaves slow start before a deep buffer overflows; the
  same flow without it overshoots and loses thousands of segments.
- Long RTT, buffer below the bandwidth-delay product (the R4 buffer-sizing
  question): NewReno without SACK repairs the slow-start overshoot one hole
  per round trip and starves; Linux's SACK, RACK and PRR keep the link busy
  (``@pytest.mark.slow``; numbers in docs/validation/tcp-linux.md).
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import fabricsim
from fabricsim.validation.long_rtt import run_case


def deep_buffer(hystart: str, cc: str = "cubic") -> dict[str, Any]:
    """One flow, 40G into 10G, 1 ms RTT, a 100 MB buffer (80 ms of queue), 400 MB."""
    return {
        "name": f"deep-buffer-{hystart}",
        "duration": "5s",
        "network": {"switch": {"latency": "0ns", "buffer": {"model": "static", "port_size": "100MB"}}},
        "topology": {
            "kind": "explicit",
            "nodes": [{"name": "h0", "kind": "host"}, {"name": "sw", "kind": "switch"}, {"name": "h1", "kind": "host"}],
            "links": [
                {"a": "h0", "b": "sw", "rate": "40Gbps", "delay": "250us"},
                {"a": "sw", "b": "h1", "rate": "10Gbps", "delay": "250us"},
            ],
        },
        # A per-segment sender (no TSO bursts): the rounds of RFC 9406's analysis.
        "tcp": {"cc": cc, "hystart": hystart, "rwnd": "1GB", "sndbuf": "1GB", "gso_max_size": "0B"},
        "traffic": [{"kind": "tcp_bulk", "src": ["h0"], "dst": "h1", "size": "400MB"}],
        "stats": {"queue_sample_interval": "0", "throughput_interval": "10ms"},
    }


def run(scenario: dict[str, Any]) -> fabricsim.Result:
    result = fabricsim.run(fabricsim.Scenario.from_dict(scenario))
    assert result.summary["conservation_ok"] and result.summary["flows_completed"] == 1
    return result


def test_hystart_plus_plus_exits_slow_start_without_loss_on_a_large_buffer(core):
    # The queue's delay must rise by 4 ms from one round to the next
    # (MIN_RTT_THRESH) before HyStart++ reacts: it leaves standard slow start
    # with about 25 MB in flight (20 ms of queue), and Conservative Slow
    # Start's 5 rounds stay within the 100 MB buffer.
    flow = run(deep_buffer("hystart++")).flows.row(0, named=True)
    assert flow["ss_exit_reason"] == "hystart++"
    assert flow["retransmits"] == 0 and flow["timeouts"] == 0
    assert 20e6 < flow["ss_exit_cwnd"] < 30e6


def test_without_hystart_slow_start_overshoots_a_large_buffer(core):
    result = run(deep_buffer("off"))
    flow = result.flows.row(0, named=True)
    assert flow["ss_exit_reason"] == "loss"
    # Slow start ran until the window exceeded BDP + buffer (101 MB) and
    # kept doubling for the round trip it took to see the first loss.
    assert flow["ss_exit_cwnd"] > 150e6
    assert result.summary["packets_dropped"] > 10_000
    # SACK, RACK and PRR repair that window without a timeout.
    assert flow["timeouts"] == 0 and flow["rack_losses"] > 10_000


def test_hystart_plus_plus_works_with_newreno_too(core):
    flow = run(deep_buffer("hystart++", cc="newreno")).flows.row(0, named=True)
    assert flow["ss_exit_reason"] == "hystart++" and flow["retransmits"] == 0


def test_flows_table_has_the_recovery_and_slow_start_columns(core):
    flows = run(deep_buffer("off")).flows
    for column in (
        "recovery_retransmits",
        "recovery_time_ps",
        "rack_losses",
        "tlp_probes",
        "tlp_recoveries",
        "dsacks",
        "spurious_retransmits",
        "ss_exit_ps",
        "ss_exit_cwnd",
        "ss_exit_reason",
    ):
        assert column in flows.columns, column
    assert flows.schema["ss_exit_reason"] in (pl.Categorical, pl.Enum, pl.Utf8)
    # An episode of fast recovery repairs the whole overshoot.
    assert flows["fast_retransmits"][0] <= 2
    assert flows["recovery_retransmits"][0] == flows["retransmits"][0]


@pytest.mark.slow
@pytest.mark.parametrize("buffer", ["12MB", "24MB", "36MB"])
def test_long_rtt_linux_keeps_the_link_busy_where_newreno_without_sack_starves(core, buffer):
    # 10G, 50 ms RTT (BDP 62.5 MB), 2 streams, 9000 B MTU, 30 s.
    rfc = run_case(buffer, "rfc")
    linux = run_case(buffer, "linux")
    assert rfc["conservation_ok"] and linux["conservation_ok"]
    # Thousands of segments lost in the slow-start overshoot, repaired one per
    # 50 ms round trip: the link idles for most of the run.
    assert rfc["goodput_after_skip_gbps"] < 1.0, rfc
    # Linux repairs the overshoot in a few round trips; what remains is
    # CUBIC's sawtooth with a buffer below the BDP.
    assert linux["goodput_after_skip_gbps"] > 8.0, linux
    assert linux["timeouts"] == 0 and linux["recovery_time_s"] < 2.0, linux


def test_cubic_on_jiffies_grows_in_steps_on_a_path_shorter_than_a_jiffy(core):
    """Linux CUBIC keeps time in jiffies (``cubic_hz``): on a sub-ms path one
    recomputed increase holds for several RTTs, so two jumbo-frame flows into
    a 250 KB drop-tail queue lose more packets per loss episode than with the
    curve in exact time; holding for HZ / 32 jiffies while cwnd is unchanged
    (``cubic_hold_hz32``, what the lab's kernel runs) makes the steps larger
    still (the lab's kernel: 4.9 per episode; the twin 4.9-5.5 with the HZ / 32
    hold, 2.0 with min(HZ / 32, delay_min), 1.1 in exact time;
    docs/validation/linux.md)."""
    from fabricsim.validation import linux_dumbbell

    setup = linux_dumbbell.DumbbellSetup(senders=2, cc="cubic", mtu=9000, duration_s=2.0)
    rules = {
        "exact": {"cubic_hz": 0},
        "delay_min": {"cubic_hz": 250, "cubic_hold_hz32": False},
        "hz32": {"cubic_hz": 250, "cubic_hold_hz32": True},
    }
    runs = {name: linux_dumbbell.simulate(setup, 10.0, tcp=tcp) for name, tcp in rules.items()}
    assert all(r["conservation_ok"] for r in runs.values())
    per_episode = {name: r["drops"] / r["recoveries"] for name, r in runs.items()}
    assert per_episode["delay_min"] > 1.4 * per_episode["exact"], per_episode
    assert per_episode["hz32"] > 1.5 * per_episode["delay_min"], per_episode
    again = linux_dumbbell.simulate(setup, 10.0, tcp=rules["hz32"])
    assert again["drops"] == runs["hz32"]["drops"]
    # The lab's twin runs the lab kernel's rule.
    assert linux_dumbbell.scenario(setup, 10.0)["tcp"]["cubic_hold_hz32"] is linux_dumbbell.LAB_CUBIC_HOLD_HZ32 is True


def test_cubic_hz_is_checked_and_reaches_the_core_only_when_set():
    from fabricsim.errors import ScenarioError

    scenario = deep_buffer("classic")
    scenario["tcp"]["cubic_hz"] = -1
    with pytest.raises(ScenarioError, match=r"tcp\.cubic_hz"):
        fabricsim.Scenario.from_dict(scenario)
    scenario["tcp"]["cubic_hz"] = 250
    assert fabricsim.Scenario.from_dict(scenario).tcp.to_resolved()["cubic_hz"] == 250
    del scenario["tcp"]["cubic_hz"]
    assert "cubic_hz" not in fabricsim.Scenario.from_dict(scenario).tcp.to_resolved()


def test_kernel_generation_profiles_set_what_their_kernels_had():
    """linux-3.10 has TLP and PRR but no RACK or SACK compression and a 128 KiB
    TSQ limit; linux-4.19 has RACK and 256 KiB; both the 87380 B initial receive
    buffer and no pushed ACK; the core runs them as Linux with those fields; a field given wins."""
    import fabricsim

    def tcp(profile, extra=""):
        return fabricsim.loads(
            "name: t\nduration: 1ms\ntopology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}\n"
            f"tcp: {{profile: {profile}{extra}}}\ntraffic: [{{kind: tcp_bulk, src: h1, dst: h0, size: 1MB}}]\n")

    old, mid, now = tcp("linux-3.10").tcp, tcp("linux-4.19").tcp, tcp("linux").tcp
    assert (old.rack, old.tlp, old.prr, old.sack, old.sack_compression) == (False, True, True, True, 0)
    assert (mid.rack, mid.sack_compression, mid.limit_output_bytes) == (True, 44, 256 * 1024)
    assert old.limit_output_bytes == 128 * 1024 and now.limit_output_bytes == 4 * 1024 * 1024
    assert old.rmem[1] == mid.rmem[1] == 87_380 and now.rmem[1] == 131_072
    # The pushed ACK of a full PSH segment came with Linux 6.7.
    assert (old.ack_pushed, mid.ack_pushed, now.ack_pushed) == (False, False, True)
    assert tcp("linux-4.19", ", ack_pushed: true").tcp.ack_pushed
    assert tcp("linux-3.10", ", limit_output_bytes: 1MiB").tcp.limit_output_bytes == 1 << 20
    import json

    from fabricsim.runner import _resolved_json

    assert json.loads(_resolved_json(tcp("linux-3.10")))["tcp"]["profile"] == "linux"
    result = fabricsim.run(tcp("linux-3.10"))
    assert result.summary["conservation_ok"] and result.flows["completed"].all()
