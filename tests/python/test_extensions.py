"""Models registered in the core from outside it: a switch buffer's ``model`` and
``roce.cc`` accept the built-in names and the registered ones, with the usual
errors naming the field and the allowed values; a registered model's ``params``
are checked by its factory. The ABM-like policy is in this build when the core
was compiled with the ``example-buffer`` feature (crates/fabricsim-ext-example-buffer)."""

import json

import pytest

import fabricsim
from fabricsim import ScenarioError, loads
from fabricsim.schema import extensions

INCAST = """
duration: 2ms
seed: 1
network:
  classes: 1
  switch: {{latency: 500ns, buffer: {buffer}}}
topology: {{kind: star, hosts: 12, link: {{rate: 10Gbps, delay: 1us}}}}
traffic:
  - {{kind: tcp_incast, client: h0, servers: [h1, h2, h3, h4, h5, h6, h7, h8], response_size: 64KB, rounds: 2}}
  - {{kind: tcp_bulk, src: [h9], dst: h10, size: 2MB}}
"""


def issues(text):
    with pytest.raises(ScenarioError) as err:
        loads(text)
    return [(i.path, i.message) for i in err.value.issues]


def abm_or_skip(core):
    if "abm" not in json.loads(core.extensions())["buffer"]:
        pytest.skip("the core was built without the example-buffer feature")


def test_the_core_lists_its_registered_models(core):
    found = json.loads(core.extensions())
    assert set(found) == {"buffer", "rate_cc"}
    assert extensions.buffer_models()[:4] == ("static", "shared", "voq", "intelligent")
    assert extensions.rate_controllers()[0] == "dcqcn"
    for name, entry in found["buffer"].items():
        assert entry["schema"]["type"] == "object" and entry["summary"], name


def test_an_unknown_buffer_model_lists_the_built_in_and_registered_ones(core):
    [(path, message)] = issues(INCAST.format(buffer="{model: nope}"))
    assert path == "network.switch.buffer.model"
    assert message.startswith("unknown value 'nope'; allowed: static, shared, voq, intelligent")
    for name in json.loads(core.extensions())["buffer"]:
        assert name in message.split("allowed: ")[1].split(", ")


def test_params_belong_to_registered_policies_only(core):
    [(path, message)] = issues(INCAST.format(buffer="{model: shared, size: 1MB, params: {size: 1}}"))
    assert path == "network.switch.buffer.params"
    assert "only for model a registered policy (model is shared)" in message


def test_an_unknown_rate_controller_is_refused_and_dcqcn_takes_no_cc_params(core):
    base = "duration: 1ms\ntopology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}\n"
    [(path, message)] = issues(base + "roce: {cc: swiftly}\n")
    assert path == "roce.cc"
    assert message.startswith("unknown value 'swiftly'; allowed: dcqcn")
    assert "hpcc" in message.split("allowed: ")[1].split(", "), "the core registers HPCC itself"
    [(path, message)] = issues(base + "roce: {cc: hpcc, cc_params: {eta: 2}}\n")
    assert path == "roce.cc_params.eta"
    [(path, message)] = issues(base + "roce: {cc_params: {eta: 0.95}}\n")
    assert (path, message) == ("roce.cc_params", "only for a registered rate controller (cc is dcqcn)")
    # DCQCN resolves as before: no cc key in the resolved scenario.
    assert "cc" not in loads(base + "roce: {mtu: 1024}\n").to_resolved()["roce"]


def test_registered_policy_params_are_checked_by_its_factory(core):
    abm_or_skip(core)
    [(path, message)] = issues(INCAST.format(buffer="{model: abm, params: {size: 300000, alpha: 100}}"))
    assert path == "network.switch.buffer.params.alpha"
    assert "100 is out of range; allowed: 0.0078125 to 64" in message
    [(path, message)] = issues(INCAST.format(buffer="{model: abm, params: {size: 300000, alhpa: 1}}"))
    assert path == "network.switch.buffer.params.alhpa"
    assert "unknown key 'alhpa'; allowed: alpha" in message
    [(path, message)] = issues(INCAST.format(buffer="{model: abm, params: {}}"))
    assert (path, message) == ("network.switch.buffer.params.size", "required field is missing")
    # Per-class values are checked against the scenario's classes.
    [(path, message)] = issues(INCAST.format(buffer="{model: abm, params: {size: 300000, alpha: [1, 2]}}"))
    assert path == "network.switch.buffer.params.alpha"
    assert "expected 1 or 1 values (one per class), got 2" in message


def test_a_registered_policy_runs_from_yaml(core):
    abm_or_skip(core)
    scenario = loads(INCAST.format(buffer="{model: abm, params: {size: 200000, alpha: 0.5}}"))
    assert scenario.to_resolved()["network"]["switch"]["buffer"] == {
        "model": "abm",
        "params": {"size": 200000, "alpha": 0.5},
    }
    result = fabricsim.run(scenario, progress=False)
    s = result.summary
    assert s["conservation_ok"] and s["buffer_accounting_ok"] and s["drained"]
    assert s["flows_completed"] == s["flows_total"]
    buffers = result.buffers
    assert buffers["model"].to_list() == ["abm"]
    assert 0 < buffers["high_water_bytes"][0] <= 200000
