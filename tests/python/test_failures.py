"""Link failures (docs/models/failures.md): drops on a dead link until routing
reacts, the routes recomputed after `detect`, recovery, bad input."""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim import ScenarioError, loads

STAR = """
duration: 1ms
topology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}
traffic:
  - {kind: udp_cbr, name: cbr, src: h1, dst: h0, rate: 1Gbps, frame_size: 1000B}
failures:
  - {between: [h1, sw0], at: 100us, until: 400us, detect: 100us}
"""


def _leaf_spine(hosts_per_leaf: int, flows: str, failures: str) -> str:
    """Two leaves and two spines at 10G, one tcp_flows entry and ``failures``."""
    return f"""
duration: 2ms
topology: {{kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: {hosts_per_leaf},
           host_link: {{rate: 10Gbps, delay: 1us}}, fabric_link: {{rate: 10Gbps, delay: 1us}}}}
traffic:
  - {{kind: tcp_flows, name: across, flows: [{flows}]}}
{failures}"""


def _drops(result, reason: str) -> int:
    d = result.drops.filter(result.drops["reason"] == reason)
    return int(d["packets"].sum()) if d.height else 0


def test_a_failed_host_link_loses_what_is_sent_until_routing_reacts_then_has_no_route(core):
    """A 1 Gb/s CBR of 1000 B frames (1,020 B on the wire: one every 8.16 us)
    over a host link that fails at 100 us, routing reacting 100 us later, the
    link back at 400 us and the routes at 500 us. Closed form: the frames the
    host sends in [100, 200) us (and one on the wire) die on the link
    (`link_down`, 12.25 + 1), those of [200, 500) us find no route at the host
    (36.8), the rest arrive."""
    result = fabricsim.run(loads(STAR))
    s = result.summary
    assert s["conservation_ok"] and s["buffer_accounting_ok"]
    assert (s["link_failures"], s["reroutes"]) == (1, 2)
    gap_ps = 1020 * 8 * 1000  # 8.16 us at 1 Gb/s
    assert abs(_drops(result, "link_down") - 100e6 / gap_ps) <= 1.5
    assert abs(_drops(result, "no_route") - 300e6 / gap_ps) <= 1
    flow = result.flows.row(0, named=True)
    assert flow["packets_delivered"] + flow["packets_dropped"] == flow["packets_sent"]
    assert flow["packets_delivered"] >= int(600e6 / gap_ps) - 1  # [0, 100) and [500, 1000) us


def test_traffic_moves_to_the_other_spine_after_detection_and_every_flow_completes(core):
    flows = ", ".join(f"{{src: h{i}, dst: h{i + 4}, size: 2MB}}" for i in range(4))
    text = _leaf_spine(4, flows, "failures: [{between: [leaf0, spine0], at: 200us, detect: 50us}]\n")
    result = fabricsim.run(loads(text))
    s = result.summary
    assert s["conservation_ok"] and s["buffer_accounting_ok"] and s["flows_completed"] == 4
    lost = _drops(result, "link_down")
    assert lost > 0
    # What both directions carry at 10 Gb/s in the 50 us before the routes move, what is on the
    # wire, and the queue the uplink still drains onto the dead link (short here: the fabric
    # is not congested).
    assert lost <= 50e-6 * 10e9 / (1500 * 8) * 2 + 4
    # Without the failure nothing is lost and the job ends sooner.
    plain = fabricsim.run(loads(_leaf_spine(4, flows, "")))
    assert plain.summary["packets_dropped"] == 0
    assert max(plain.flows["fct_ps"]) < max(result.flows["fct_ps"])
    again = fabricsim.run(loads(text))
    assert again.summary == result.summary


@pytest.mark.parametrize("failure, field, message", [
    ("{between: [h1, nowhere], at: 1us}", "failures[0].between[1]", "no node named \"nowhere\""),
    ("{between: [h1, h2], at: 1us}", "failures[0].between", "no link joins h1 and h2"),
    ("{between: [h1, sw0], link: 1, at: 1us}", "failures[0].link", "h1 and sw0 have 1 links"),
    ("{between: [h1, sw0], at: 5us, until: 5us}", "failures[0].until", "must be after `at`"),
    ("{between: [h1, h1], at: 5us}", "failures[0].between", "two different nodes"),
    ("{between: [h1], at: 5us}", "failures[0].between", ""),
])
def test_a_failure_that_names_no_link_is_refused_naming_the_field(core, failure, field, message):
    text = STAR.split("failures:")[0] + f"failures: [{failure}]\n"
    with pytest.raises(ScenarioError) as err:
        fabricsim.check(loads(text)) if "nowhere" in failure or "h2]" in failure or "link: 1" in failure \
            else loads(text)
    assert err.value.issues[0].path == field, str(err.value)
    assert message in str(err.value)


def test_a_tcp_flow_across_a_link_that_fails_and_recovers_completes_after_it(core):
    """No other path: the sender's retransmission timer fires into the dead
    link (then into no route), and once the link and the routes are back the
    flow completes; nothing is lost from the accounting."""
    text = """
duration: 5ms
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
tcp: {min_rto: 1ms}
traffic:
  - {kind: tcp_flows, name: f, flows: [{src: h1, dst: h0, size: 4MB}]}
failures:
  - {between: [h1, sw0], at: 300us, until: 2ms, detect: 50us}
"""
    result = fabricsim.run(loads(text))
    s = result.summary
    assert s["conservation_ok"] and s["buffer_accounting_ok"] and s["flows_completed"] == 1
    flow = result.flows.row(0, named=True)
    assert flow["timeouts"] >= 1
    assert flow["start_ps"] + flow["fct_ps"] > 2_050_000_000  # after the routes are back
    assert _drops(result, "link_down") > 0


def test_a_spine_failure_takes_all_its_links_down_and_traffic_moves_to_the_other_spine(core):
    flows = ", ".join(f"{{src: h{a}, dst: h{b}, size: 2MB}}" for a, b in ((0, 2), (1, 3), (2, 0), (3, 1)))
    text = _leaf_spine(2, flows, """failures:
  - {node: spine0, at: 200us, until: 600us, detect: 50us}
  - {between: [leaf0, spine0], at: 300us, until: 1ms, detect: 50us}
""")
    result = fabricsim.run(loads(text))
    s = result.summary
    assert s["conservation_ok"] and s["buffer_accounting_ok"] and s["flows_completed"] == 4
    assert (s["link_failures"], s["reroutes"]) == (2, 4)
    lost = result.drops.filter(result.drops["reason"] == "link_down")
    assert set(lost["node"].to_list()) <= {"spine0", "leaf0", "leaf1"} and lost["packets"].sum() > 0


def test_a_failure_names_either_a_link_or_a_node():
    with pytest.raises(ScenarioError, match="failures.0..between: give either `between`"):
        loads(STAR.split("failures:")[0] + "failures: [{between: [h1, sw0], node: sw0, at: 1us}]\n")
    with pytest.raises(ScenarioError, match=r"failures\[0\]\.node: no node named \"spine9\""):
        fabricsim.check(loads(STAR.split("failures:")[0] + "failures: [{node: spine9, at: 1us}]\n"))
