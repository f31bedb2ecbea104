"""Packet trimming from the scenario (``network.switch.trimming``): its
settings, errors that name the field, and what a trimming switch changes in
an incast's outputs."""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim import ScenarioError, loads

INCAST = """
duration: 10ms
network:
  ethernet_overhead: 0B
  switch:
    latency: 0ns
    buffer: {model: static, port_size: 125KB, queue_size: 100KB}
    TRIM
topology: {kind: star, hosts: 5, link: {rate: 100Gbps, delay: 1us}}
roce: {mtu: 4096B, header: 64B, dcqcn: {enabled: false}, recovery: selective_repeat, dupthresh: 3, rto: 250us}
traffic:
  - {kind: rdma_write, src: [h1, h2, h3, h4], dst: h0, message_size: 500KB}
stats: {queue_sample_interval: 0}
"""


def _with(trim: str) -> str:
    return INCAST.replace("TRIM", trim)


def test_trimming_is_off_unless_given_and_resolves_to_bytes():
    assert loads(_with("")).to_resolved()["network"]["switch"].get("trimming") is None
    assert loads(_with("trimming: {}")).to_resolved()["network"]["switch"]["trimming"] == {"header_bytes": 64}
    resolved = loads(_with("trimming: {header: 128B, class: 6}")).to_resolved()["network"]["switch"]["trimming"]
    assert resolved == {"header_bytes": 128, "class": 6}


@pytest.mark.parametrize(
    "trim, field",
    [
        ("trimming: {header: 32B}", "network.switch.trimming.header"),
        ("trimming: {class: 9}", "network.switch.trimming.class"),
        ("trimming: {size: 64B}", "network.switch.trimming.size"),
    ],
)
def test_bad_trimming_names_the_field(trim, field):
    with pytest.raises(ScenarioError) as err:
        loads(_with(trim))
    assert field in str(err.value), str(err.value)


def test_a_class_beyond_the_network_s_classes_is_refused_naming_the_field():
    text = _with("trimming: {class: 5}").replace("ethernet_overhead: 0B", "ethernet_overhead: 0B\n  classes: 4")
    with pytest.raises(fabricsim.FabricsimError) as err:
        fabricsim.run(loads(text))
    assert "network.switch.trimming.class" in str(err.value)


def test_a_trimming_switch_forwards_headers_instead_of_dropping():
    dropped = fabricsim.run(loads(_with("")))
    trimmed = fabricsim.run(loads(_with("trimming: {}")))
    assert dropped.summary["packets_dropped"] > 0
    assert "packets_trimmed" not in dropped.summary and "trims" not in dropped.tables()
    s = trimmed.summary
    assert s["packets_dropped"] == 0 and s["conservation_ok"] and s["rdma_qps_completed"] == 4
    assert s["packets_trimmed"] > 0
    assert trimmed.flows["trimmed_headers"].sum() == s["packets_trimmed"]
    trims = trimmed.tables()["trims"]
    assert trims["node"].to_list() == ["sw0"] and trims["packets"].sum() == s["packets_trimmed"]
    assert trims["bytes_cut"].sum() == s["bytes_trimmed"]
    assert max(trimmed.flows["fct_ps"]) < max(dropped.flows["fct_ps"])


def test_captures_flag_the_trimmed_headers_and_the_nacks_that_answer_them():
    text = _with("trimming: {}").replace(
        "stats: {queue_sample_interval: 0}", "stats: {queue_sample_interval: 0, pcap: [{node: h0, direction: both}]}")
    result = fabricsim.run(loads(text))
    cap = result.tables()["captures"]
    headers = cap.filter(cap["trimmed"] & (cap["roce_op"] <= 4))
    nacks = cap.filter(cap["trimmed"] & (cap["roce_op"] == 6))
    assert headers.height == result.summary["packets_trimmed"]
    assert set(headers["size"].to_list()) == {64}
    # Every header whose PSN the receiver does not hold is answered by a NACK naming it.
    assert 0 < nacks.height <= headers.height
    assert not cap.filter(~cap["trimmed"] & (cap["size"] == 64) & (cap["roce_op"] <= 4)).height
