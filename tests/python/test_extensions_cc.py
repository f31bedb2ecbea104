"""Congestion controllers registered with the core (fabricsim.extensions): names and parameters in the
scenario schema, errors that name the field."""

import pytest

import fabricsim
from fabricsim import extensions

SCENARIO = {
    "duration": "2ms",
    "topology": {"kind": "star", "hosts": 3, "link": {"rate": "10Gbps", "delay": "2us"}},
    "tcp": {"cc": "newreno"},
    "traffic": [{"kind": "tcp_bulk", "src": ["h1", "h2"], "dst": "h0", "size": "200KB"}],
}


def _with_tcp(**tcp) -> dict:
    return {**SCENARIO, "tcp": tcp}


class _FixedWindow:
    """A fixed window of `segments` segments (for schema tests)."""

    def __init__(self, params, conn):
        self.segments = params.get("segments", 10)
        self.mss = conn.mss

    def cong_avoid(self, ack):
        self.cwnd = self.segments * self.mss

    def on_loss(self, loss):
        return self.segments * self.mss


SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"segments": {"type": "integer", "minimum": 1, "maximum": 1000}},
}


@pytest.fixture
def fixed(core):
    extensions.register_cc("fixed-window", _FixedWindow, schema=SCHEMA, replace=True)
    yield "fixed-window"
    extensions.unregister_cc("fixed-window")


def test_an_unknown_controller_lists_the_built_ins_and_the_registered_ones(fixed):
    with pytest.raises(fabricsim.ScenarioError) as e:
        fabricsim.from_dict(_with_tcp(cc="no-such-cc"))
    message = str(e.value)
    assert "tcp.cc: unknown value 'no-such-cc'; allowed: newreno, cubic, dctcp, htcp" in message
    assert "fixed-window" in message


def test_a_registered_name_is_accepted_and_its_parameters_checked(fixed):
    s = fabricsim.from_dict(_with_tcp(cc="fixed-window", cc_params={"segments": 4}))
    resolved = s.to_resolved()["tcp"]
    assert resolved["cc"] == "fixed-window" and resolved["cc_params"] == {"segments": 4}
    with pytest.raises(fabricsim.ScenarioError, match=r"tcp\.cc_params\.segments: must be from 1 to 1000, not 0"):
        fabricsim.from_dict(_with_tcp(cc="fixed-window", cc_params={"segments": 0}))
    with pytest.raises(fabricsim.ScenarioError, match=r"tcp\.cc_params\.segs: unknown key; allowed: segments"):
        fabricsim.from_dict(_with_tcp(cc="fixed-window", cc_params={"segs": 4}))


def test_parameters_with_a_built_in_controller_are_refused():
    with pytest.raises(fabricsim.ScenarioError, match=r"tcp\.cc_params: only a registered controller takes parameters"):
        fabricsim.from_dict(_with_tcp(cc="cubic", cc_params={"x": 1}))


def test_the_listing_has_each_controllers_schema(fixed):
    listed = extensions.registered_cc()
    assert listed["fixed-window"]["schema"] == SCHEMA
    assert listed["fixed-window"]["python"] is True
    assert listed["fixed-window"]["summary"].startswith("A fixed window")
    assert extensions.cc_names()[:4] == ["newreno", "cubic", "dctcp", "htcp"]


def test_the_core_checks_the_name_and_parameters_too(core, fixed):
    # The resolved JSON straight to the core: the same errors, with the core's field paths.
    import json

    resolved = fabricsim.from_dict(_with_tcp(cc="fixed-window")).to_resolved()
    resolved["tcp"]["cc_params"] = {"segments": "many"}
    with pytest.raises(core.ConfigError, match=r"tcp\.cc_params\.segments: must be a whole number"):
        core.Simulation(json.dumps(resolved))
    resolved["tcp"]["cc"] = "gone"
    with pytest.raises(core.ConfigError, match=r"tcp\.cc: unknown value 'gone'; allowed: newreno, cubic, dctcp, htcp"):
        core.Simulation(json.dumps(resolved))
