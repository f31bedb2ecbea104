"""Congestion controllers written in Python (fabricsim.extensions.register_cc): the core calls them
through its controller interface, and a line-for-line port of a controller gives its outputs exactly."""

import json
import time

import pytest

import fabricsim
from fabricsim import extensions
from fabricsim.extensions import examples

FEATURE = "example-extensions"


def _incast(cc: str, profile: str = "rfc", cc_params=None, senders: int = 4) -> dict:
    """Senders into one port of a 60 kB buffer: slow start, losses, fast recovery, timeouts."""
    tcp = {"profile": profile, "cc": cc}
    if cc_params is not None:
        tcp["cc_params"] = cc_params
    return {
        "name": "cc-compare",
        "seed": 3,
        "duration": "3ms",
        "network": {"switch": {"latency": "0ns", "buffer": {"model": "static", "port_size": "60KB"}}},
        "topology": {"kind": "star", "hosts": senders + 1, "link": {"rate": "10Gbps", "delay": "2us"}},
        "tcp": tcp,
        "traffic": [{"kind": "tcp_bulk", "src": [f"h{i}" for i in range(1, senders + 1)], "dst": "h0", "size": "1MB"}],
    }


def _tables(result) -> dict:
    """Every table as rows, the flows table's controller name left out; the summary without its name."""
    out = {}
    for name, frame in result.tables().items():
        if name == "flows":
            frame = frame.drop("cc")
        # NaN (a mean over no reordered packets) compares unequal to itself: compare its text.
        out[name] = json.dumps(frame.to_dicts(), sort_keys=True, default=str)
    summary = {k: v for k, v in result.summary.items() if k not in ("scenario",)}
    out["summary"] = json.dumps(summary, sort_keys=True, default=str)
    return out


@pytest.fixture
def registered(core):
    examples.register()
    yield
    extensions.unregister_cc("newreno-py")
    extensions.unregister_cc("swift-py")


@pytest.mark.parametrize("profile,byte_counting", [("rfc", False), ("linux", True)])
def test_the_python_newreno_port_gives_the_built_in_newrenos_outputs(registered, profile, byte_counting):
    builtin = fabricsim.run(fabricsim.from_dict(_incast("newreno", profile)))
    ported = fabricsim.run(fabricsim.from_dict(_incast("newreno-py", profile, {"byte_counting": byte_counting})))
    assert builtin.summary["packets_dropped"] > 0, "the scenario has losses"
    assert builtin.flows["fast_retransmits"].sum() > 0
    assert _tables(builtin) == _tables(ported)
    assert set(ported.flows["cc"]) == {"newreno-py"}


def test_the_python_swift_port_gives_the_rust_swifts_outputs(registered):
    if FEATURE not in extensions.core_features():
        pytest.skip(f"the core was built without the cargo feature {FEATURE!r} (no Rust 'swift')")
    for params in [{"base_target_us": 30}, {}]:
        rust = fabricsim.run(fabricsim.from_dict(_incast("swift", "linux", params, senders=6)))
        python = fabricsim.run(fabricsim.from_dict(_incast("swift-py", "linux", params, senders=6)))
        assert rust.flows["bytes_delivered"].sum() > 0
        assert _tables(rust) == _tables(python)


def test_an_exception_in_a_controller_is_raised_with_its_name(core):
    class Broken:
        def __init__(self, params, conn):
            self.calls = 0

        def cong_avoid(self, ack):
            self.calls += 1
            if self.calls == 5:
                raise ZeroDivisionError("boom")

        def on_loss(self, loss):
            return 2 * loss.mss

    extensions.register_cc("broken-cc", Broken, replace=True)
    try:
        with pytest.raises(RuntimeError, match=r"congestion controller 'broken-cc' failed in cong_avoid: ZeroDivisionError: boom"):
            fabricsim.run(fabricsim.from_dict(_incast("broken-cc")))
    finally:
        extensions.unregister_cc("broken-cc")


def test_a_class_without_on_loss_is_refused(core):
    class NoLoss:
        def __init__(self, params, conn):
            pass

    with pytest.raises(ValueError, match="needs an on_loss"):
        extensions.register_cc("no-loss", NoLoss)


def test_sweeps_refuse_python_controllers(registered, tmp_path):
    from fabricsim.sweeps.grid import SweepError
    from fabricsim.sweeps.runner import run_sweep

    path = tmp_path / "s.yaml"
    path.write_text(fabricsim.from_dict(_incast("newreno-py")).to_yaml())
    with pytest.raises(SweepError, match=r"tcp\.cc: 'newreno-py' is a Python controller registered in this process"):
        run_sweep(path, [("seed", ["1", "2"])], out_dir=tmp_path / "out")


def test_cost_of_a_python_callback(registered):
    """The wall time of the Python NewReno port against the built-in one on the same run, per
    controller call (printed; asserted only to be positive and below a millisecond)."""
    calls = {"n": 0}

    class Counting(examples.NewRenoPy):
        def cong_avoid(self, ack):
            calls["n"] += 1
            super().cong_avoid(ack)

    extensions.register_cc("newreno-count", Counting, schema=examples.newreno.NEWRENO_SCHEMA, replace=True)
    try:
        doc = _incast("newreno", "rfc", senders=8)
        doc["duration"] = "20ms"
        doc["traffic"][0]["size"] = "5MB"
        t0 = time.perf_counter()
        fabricsim.run(fabricsim.from_dict(doc))
        native = time.perf_counter() - t0
        doc["tcp"]["cc"] = "newreno-count"
        t0 = time.perf_counter()
        fabricsim.run(fabricsim.from_dict(doc))
        python = time.perf_counter() - t0
    finally:
        extensions.unregister_cc("newreno-count")
    per_call_ns = (python - native) / max(calls["n"], 1) * 1e9
    print(f"\n{calls['n']} cong_avoid calls; native {native:.3f} s, Python {python:.3f} s: {per_call_ns:.0f} ns per call")
    assert calls["n"] > 1000
    assert per_call_ns < 1e6
