"""Analytic validation: one output port fed by Poisson arrivals of fixed-size
frames is an M/D/1 queue; its mean waiting time is Wq = rho * S / (2 (1 - rho))."""

import pytest

import fabricsim

FRAME = 1000  # bytes; 1020 B on the wire with the 20 B Ethernet overhead
EGRESS_BPS = 10_000_000_000
SERVICE_S = (FRAME + 20) * 8 / EGRESS_BPS  # 816 ns


def md1_scenario(load: float) -> dict:
    # The host link is 100x faster than the switch egress, so the host NIC adds
    # no queueing of note and the switch port sees (near-)Poisson arrivals.
    return {
        "name": f"md1-{load}",
        "seed": 11,
        "duration": "500ms",
        "network": {"switch": {"latency": "0ns", "buffer": {"model": "static", "port_size": "1GB"}}},
        "topology": {
            "kind": "explicit",
            "nodes": [{"name": "h0", "kind": "host"}, {"name": "sw", "kind": "switch"}, {"name": "h1", "kind": "host"}],
            "links": [
                {"a": "h0", "b": "sw", "rate": "1Tbps", "delay": "1us"},
                {"a": "sw", "b": "h1", "rate": "10Gbps", "delay": "1us"},
            ],
        },
        "traffic": [{"kind": "udp_poisson", "name": "poisson", "src": "h0", "dst": "h1",
                     "rate": str(int(load * EGRESS_BPS)), "frame_size": f"{FRAME}B"}],
        "stats": {"queue_sample_interval": "0"},
    }


@pytest.mark.parametrize("load", [0.5, 0.8])
def test_mean_queueing_delay_matches_md1(core, load):
    result = fabricsim.run(fabricsim.Scenario.from_dict(md1_scenario(load)))
    links = result.links
    egress = links.filter((links["src"] == "sw") & (links["dst"] == "h1")).row(0, named=True)
    wq_sim = egress["queue_delay_mean_ps"] * 1e-12
    wq_theory = load * SERVICE_S / (2 * (1 - load))
    assert wq_sim == pytest.approx(wq_theory, rel=0.05), (wq_sim, wq_theory)
    # Link utilization equals the offered load (measured over the sending period).
    wire_bits = (egress["bytes"] + 20 * egress["packets"]) * 8
    duration_s = 0.5
    assert wire_bits / (EGRESS_BPS * duration_s) == pytest.approx(load, rel=0.01)
    assert result.summary["conservation_ok"] and result.summary["packets_dropped"] == 0
