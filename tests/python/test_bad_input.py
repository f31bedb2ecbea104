"""Bad and unbounded input gets a clear error naming the field, in bounded
time and memory; validate applies the checks run applies; names are text in
reports."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import fabricsim
from fabricsim import ScenarioError, loads
from fabricsim.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DATAMINING = str(ROOT / "scenarios" / "leafspine-datamining.yaml")

GOOD = """
duration: 1ms
topology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}
traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}]
"""


def validate(capsys, text_or_path, *overrides, tmp_path=None):
    """``fabricsim validate``: (exit status, stdout, stderr)."""
    path = text_or_path
    if tmp_path is not None:
        path = tmp_path / "s.yaml"
        path.write_text(text_or_path)
    args = ["validate", str(path)]
    for override in overrides:
        args += ["--set", override]
    status = main(args)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_field_error(result, field, *needles):
    status, out, err = result
    assert status == 2, (status, err)
    assert out == "", "nothing is printed on stdout (no NaN, no partial JSON)"
    assert f": {field}: " in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    assert "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("value", [".inf", ".nan", "-.inf"])
def test_infinite_or_nan_numbers_are_refused_at_their_field(core, capsys, tmp_path, value):
    cases = {
        "network.switch.drr_weights[0]": f"network: {{switch: {{scheduler: drr, drr_weights: [{value}]}}}}",
        "network.switch.buffer.afd_a": f"network: {{switch: {{buffer: {{model: intelligent, size: 10MB, "
                                       f"afd_a: {value}}}}}}}",
        "network.switch.buffer.afd_b": f"network: {{switch: {{buffer: {{model: intelligent, size: 10MB, "
                                       f"afd_b: {value}}}}}}}",
        "network.switch.pfc.xoff_alpha": f"network: {{switch: {{buffer: {{model: shared, size: 10MB}}, "
                                         f"pfc: {{classes: [3], xoff_alpha: {value}}}}}}}",
        "topology.link.loss": None,
        "tcp.dctcp_g": f"tcp: {{dctcp_g: {value}}}",
    }
    for field, extra in cases.items():
        text = GOOD + extra + "\n" if extra else GOOD.replace("delay: 1us}", f"delay: 1us, loss: {value}}}")
        assert_field_error(validate(capsys, text, tmp_path=tmp_path), field)


def test_numbers_beyond_the_cores_range_are_refused_at_their_field(core, capsys, tmp_path):
    for field, extra in {
        "network.switch.buffer.afd_a": "network: {switch: {buffer: {model: intelligent, size: 10MB, afd_a: 5000000000}}}",
        "network.switch.buffer.afd_b": "network: {switch: {buffer: {model: intelligent, size: 10MB, afd_b: 4294967296}}}",
        "network.switch.pfc.xoff_alpha": "network: {switch: {buffer: {model: shared, size: 10MB}, "
                                         "pfc: {classes: [3], xoff_alpha: 4294967296}}}",
        "network.switch.drr_weights[0]": "network: {switch: {scheduler: drr, drr_weights: [1.0e12]}}",
        "tcp.init_cwnd": "tcp: {init_cwnd: 5000000000}",
    }.items():
        assert_field_error(validate(capsys, GOOD + extra + "\n", tmp_path=tmp_path), field)
    assert_field_error(validate(capsys, GOOD.replace("hosts: 3", "hosts: 4294967296"), tmp_path=tmp_path),
                       "topology.hosts")


def test_a_billion_hosts_are_refused_before_anything_is_built(core, capsys, tmp_path):
    result = validate(capsys, GOOD.replace("hosts: 3", "hosts: 1000000000"), tmp_path=tmp_path)
    assert_field_error(result, "topology.hosts", "1,000,000,000 ports", "65,534")


def test_voq_state_is_bounded(core, capsys):
    result = validate(capsys, DATAMINING, "duration=1ms", "network.switch.device=jericho-deep",
                      "topology.links_per_spine=1000")
    assert_field_error(result, "network.switch.buffer", "VOQ", "leaf0 has 2024 ports", "4,194,304")


def test_too_many_throughput_bins_are_refused(core, capsys, tmp_path):
    result = validate(capsys, GOOD + "stats: {throughput_interval: 1ps}\n", tmp_path=tmp_path)
    assert_field_error(result, "stats.throughput_interval", "10,000,000", "at least 100 ps")


def test_an_infinite_load_scale_is_refused_quickly(tmp_path):
    """This once grew past 2 GB and never ended: a subprocess with a time and
    memory limit."""
    r = subprocess.run(
        [sys.executable, "-c", "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
         "from fabricsim.cli.main import main; sys.exit(main(sys.argv[1:]))",
         "validate", DATAMINING, "--set", "duration=1ms", "--set", "traffic.1.load_scale=.inf"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "traffic[1].load_scale: must be a finite number" in r.stderr


def test_a_workload_above_its_flow_limit_fails_before_drawing_flows(core, capsys):
    result = validate(capsys, DATAMINING, "duration=1ms", "traffic.1.load_scale=1.0e+12")
    assert_field_error(result, "traffic[1].max_flows", "about", "1,000,000")
    result = validate(capsys, DATAMINING, "duration=50ms", "traffic.1.max_flows=5")
    assert_field_error(result, "traffic[1].max_flows", "more than 5 flows")


def test_a_vanishing_load_is_an_empty_workload_without_numpy_warnings(core):
    scenario = fabricsim.load(DATAMINING, ["duration=1ms", "traffic.1.load_scale=1.0e-300"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolved = scenario.to_resolved()
    assert resolved["traffic"][1]["flows"] == []


def test_deeply_nested_yaml_is_refused(capsys, tmp_path):
    for nested in ("[" * 300 + "]" * 300, "{a: " * 300 + "1" + "}" * 300, "[" * 70 + "]" * 70):
        status, _, err = validate(capsys, GOOD + f"x: {nested}\n", tmp_path=tmp_path)
        assert status == 2 and "levels deep" in err and "Recursion" not in err, err


@pytest.mark.parametrize("content, needle", [
    (b"0 0.5\n0 1\n", "every size is 0"),
    (b"100 0.5\n\xe9200 1\n", "not a UTF-8 text file"),
    (b"1e300 1\n", "from 0 to 2**53"),
])
def test_bad_cdf_files_are_refused_at_the_cdf_field(core, capsys, tmp_path, content, needle):
    cdf = tmp_path / "sizes.cdf"
    cdf.write_bytes(content)
    text = GOOD.replace("[{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}]",
                        f"[{{kind: workload, cdf: '{cdf}', load: 50%}}]")
    assert_field_error(validate(capsys, text, tmp_path=tmp_path), "traffic[0].cdf", needle)


@pytest.mark.parametrize("dst, needle", [("h7", "unknown host 'h7'"), ("sw0", "'sw0' is a switch, not a host")])
def test_validate_applies_the_checks_of_run(core, capsys, tmp_path, dst, needle):
    assert_field_error(validate(capsys, GOOD.replace("dst: h1", f"dst: {dst}"), tmp_path=tmp_path),
                       "traffic[0].dst", needle)


def test_validate_prints_finite_json(core, capsys, tmp_path):
    status, out, _ = validate(capsys, GOOD, tmp_path=tmp_path)
    assert status == 0 and "NaN" not in out and "Infinity" not in out
    json.loads(out)


DOLLARS = r"""
name: '$\badcmd$ <b>x</b>'
duration: 200us
topology:
  kind: explicit
  nodes: [{name: '$\badcmd$', kind: host}, {name: '<script>x</script>', kind: host}, {name: '$s$', kind: switch}]
  links:
    - {a: '$\badcmd$', b: '$s$', rate: 10Gbps, delay: 1us}
    - {a: '<script>x</script>', b: '$s$', rate: 1Gbps, delay: 1us}
network: {switch: {buffer: {port_size: 20KB}}}
traffic: [{kind: udp_cbr, name: '$f$', src: '$\badcmd$', dst: '<script>x</script>', rate: 5Gbps}]
stats: {queue_sample_interval: 1us, throughput_interval: 10us}
"""


def test_names_are_text_in_plots_and_html(core, tmp_path):
    """A dollar sign would make matplotlib read a name as math (and fail on an
    unknown command); markup in a name must not reach the page as markup."""
    result = fabricsim.run(loads(DOLLARS))
    result.write(tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert r"$\badcmd$" in page
    assert {p.name for p in (tmp_path / "out" / "plots").iterdir()} >= {"queues.svg", "throughput.svg", "drops.svg",
                                                                        "links.svg"}


def test_deep_mappings_given_as_data_are_refused():
    nested: list = []
    for _ in range(100):
        nested = [nested]
    with pytest.raises(ScenarioError, match="levels deep"):
        fabricsim.from_dict({"duration": "1ms", "x": nested})


BOMB = GOOD + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9 if prev else ['x'] * 9)}]\n"
    for prev, name in zip([None, *"abcdefgh"], "abcdefghi")
)


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path):
    """Nine levels of nine aliases expand to 387 million values: measured with
    each shared list counted once, in a subprocess with a time and memory limit."""
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    r = subprocess.run(
        [sys.executable, "-c", "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
         "from fabricsim.cli.main import main; sys.exit(main(sys.argv[1:]))", "validate", str(path)],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert "more than 20,000,000 values once its aliases are expanded" in r.stderr
    with pytest.raises(ScenarioError, match="aliases are expanded"):
        loads(BOMB)
    with pytest.raises(ScenarioError, match="levels deep"):  # an alias inside its own anchor
        fabricsim.from_dict((lambda cycle: (cycle.append(cycle), {"duration": "1ms", "x": cycle})[1])([]))
    # Aliases that expand to a small document pass the size check (the schema then looks at the keys).
    with pytest.raises(ScenarioError, match="unknown key 'x'"):
        loads(GOOD.replace("link: {rate", "link: &link {rate") + "x: [*link, *link]\n")


@pytest.mark.parametrize("field, text", [
    ("topology.link.rate", GOOD.replace("rate: 10Gbps", "rate: 18446744073709551615")),
    ("topology.link.rate", GOOD.replace("rate: 10Gbps", "rate: 101Tbps")),
    ("traffic[0].rate", GOOD.replace("rate: 1Gbps", "rate: 18000000Tbps")),
    ("tcp.pacing_rate", GOOD + "tcp: {pacing_rate: 200Tbps}\n"),
])
def test_rates_above_100_tbps_are_refused_at_their_field(capsys, tmp_path, field, text):
    assert_field_error(validate(capsys, text, tmp_path=tmp_path), field, "must be <= 100Tbps")


def test_rates_up_to_100_tbps_are_accepted(core, capsys, tmp_path):
    status, _, err = validate(capsys, GOOD.replace("rate: 10Gbps", "rate: 100Tbps"), tmp_path=tmp_path)
    assert status == 0, err


@pytest.mark.parametrize("weight", ["1.0e+308", "1.0e+7"])
def test_huge_drr_weights_are_refused_at_their_field(capsys, tmp_path, weight):
    text = GOOD + f"network: {{switch: {{scheduler: drr, drr_weights: [1, {weight}]}}}}\n"
    assert_field_error(validate(capsys, text, tmp_path=tmp_path), "network.switch.drr_weights[1]", "must be <= 1000000")


def test_host_model_and_pipeline_numbers_are_refused_at_the_field_set(core, capsys, tmp_path):
    text = GOOD + "network: {host: {model: {preset: linux-kernel, gso: 1TB}}}\n"
    assert_field_error(validate(capsys, text, tmp_path=tmp_path), "network.host.model.gso", "4294967295B")
    esg = str(ROOT / "scenarios" / "esg-fairness.yaml")
    assert_field_error(validate(capsys, esg, "network.switch.pipeline.rate=1e30Tpps"),
                       "network.switch.pipeline.rate", "must be <= 1Tpps")
    text = GOOD.replace("[{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}]",
                        "[{kind: ping_pong, src: h0, dst: h1, message_size: 10GB, messages: 10, protocol: tcp}]")
    assert_field_error(validate(capsys, text, tmp_path=tmp_path), "traffic[0].message_size", "4294967295B")


def command(capsys, *args):
    """A ``fabricsim`` command in this process: (exit status, stdout, stderr);
    argparse's own errors exit with status 2."""
    try:
        status = main(list(args))
    except SystemExit as exc:
        status = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    return status, captured.out, captured.err


@pytest.mark.parametrize("args, needles", [
    (["burst-absorption", "scenarios/burst-absorption.yaml", "--ports", "0"], ["--ports", "must be >= 1"]),
    (["dumbbell", "record", "--grid", "--reprobe-latency", "--out", "no-such-recordings.json.gz"],
     ["record --reprobe-latency: no recordings at"]),
    (["burst-absorption", "scenarios/burst-absorption.yaml", "--ports", "-1"], ["--ports", "must be >= 1"]),
    (["burst-absorption", "scenarios/burst-absorption.yaml", "--ports", "70000"], ["--ports: must be from 1 to 65,533"]),
    (["burst-absorption", "scenarios/dumbbell.yaml", "--ports", "2"], ["--ports: 2 senders need hosts h0 to h2"]),
    (["burst-absorption", "scenarios/burst-absorption.yaml", "--frame-size", "10"], ["--frame-size", "64 to 65,535"]),
    (["fairness", "scenarios/esg-fairness.yaml", "--sources", "0"], ["--sources", "must be >= 2"]),
    (["fairness", "scenarios/esg-fairness.yaml", "--sources", "-1"], ["--sources", "must be >= 2"]),
    (["fairness", "scenarios/esg-fairness.yaml", "--sources", "1"], ["--sources", "must be >= 2"]),
    (["fairness", "scenarios/esg-fairness.yaml", "--sources", "32"], ["--sources: must be from 2 to 31"]),
    (["fairness", "scenarios/esg-fairness.yaml", "--sources", "1000000"], ["--sources: must be from 2 to 31"]),
    (["rfc2544", "scenarios/tolly-latency.yaml", "--max-burst", "-1"], ["--max-burst", "must be from 1"]),
    (["rfc2544", "scenarios/tolly-latency.yaml", "--max-burst", "0"], ["--max-burst", "must be from 1"]),
    (["rfc2544", "scenarios/tolly-latency.yaml", "--messages", "0"], ["--messages", "must be from 1 to 10,000,000"]),
    (["rfc2544", "scenarios/tolly-latency.yaml", "--frame-size", "0"], ["--frame-size", "64 to 65,535"]),
    (["validate", "linux", "--recorded", "--senders", "0"], ["--senders", "must be from 1 to 16"]),
    (["validate", "linux", "--recorded", "--mtu", "0"], ["--mtu", "must be from 576 to 9,000"]),
    (["validate", "linux", "--recorded", "--duration", "-1"], ["--duration", "must be > 0"]),
    (["validate", "linux", "--recorded", "--repeats", "0"], ["--repeats", "must be from 1 to 100"]),
    (["validate", "linux", "--recorded", "--senders", "4"], ["--senders: describes a live experiment"]),
])
def test_bad_flags_of_the_experiments_name_the_flag_and_its_range(core, capsys, monkeypatch, args, needles):
    monkeypatch.chdir(ROOT)
    status, out, err = command(capsys, *args)
    assert status == 2, err
    for needle in needles:
        assert needle in err, (needle, err)
    assert "traffic[0]" not in err and "duration" not in err.replace("--duration", "")


def test_the_experiments_refuse_bad_parameters_with_scenario_errors(core):
    from fabricsim.experiments.burst_absorption import burst_absorption
    from fabricsim.experiments.features import fairness
    from fabricsim.experiments.rfc2544 import Settings

    with pytest.raises(ScenarioError, match="ports: must be from 1"):
        burst_absorption(str(ROOT / "scenarios" / "burst-absorption.yaml"), ports=0)
    with pytest.raises(ScenarioError, match="sources: must be from 2 to 31"):
        fairness(str(ROOT / "scenarios" / "esg-fairness.yaml"), sources=[1])
    for name, value in (("max_burst", 0), ("messages", 0), ("trial_ps", 0), ("resolution", 0.0)):
        with pytest.raises(ScenarioError, match=f"^{name}: must be"):
            Settings(**{name: value})


def test_a_huge_scenario_name_is_refused_at_its_field():
    """A 20 MB name made the summary table take minutes to print after the run."""
    import fabricsim

    with pytest.raises(fabricsim.ScenarioError, match=r"name.*200 characters"):
        fabricsim.loads("name: " + "x" * 1_000_000 + "\nduration: 1ms\n"
                        "topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}\ntraffic: []\n")


def test_throughput_bins_too_many_to_hold_are_refused_before_the_run(tmp_path, capsys):
    """The quick start with 500 ps bins is within the bin limit but its rows took
    gigabytes and aborted the core at its end: now refused up front, with the estimate."""
    from fabricsim.cli.main import main

    root = Path(__file__).resolve().parents[2]
    code = main(["run", str(root / "scenarios" / "quickstart.yaml"), "--out", str(tmp_path / "q"),
                 "--set", "stats.throughput_interval=500ps", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "stats.throughput_interval" in err and "GiB held until the run ends" in err


# --------------------------------------------------------------------------- memory bounded at run time


def test_a_nic_queue_holds_txqueuelen_datagrams_and_refuses_the_rest():
    """A host offering twice its line rate in UDP: its NIC queue stops at
    ``txqueuelen`` (Linux's 1000) and the rest is dropped there, named; before,
    the queue grew to the 1 GB NIC buffer (3.2 GB of packets for the fairness
    scenario with its traffic entry repeated 50 times)."""
    text = """
duration: 200us
topology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}
traffic:
  - {kind: udp_cbr, src: h0, dst: h1, rate: 100%, frame_size: 1500B}
  - {kind: udp_cbr, src: h0, dst: h2, rate: 100%, frame_size: 64B}
"""
    result = fabricsim.run(loads(text))
    assert result.summary["conservation_ok"] and result.summary["buffer_accounting_ok"]
    assert 1000 <= result.summary["peak_packets_alive"] < 1100, result.summary["peak_packets_alive"]
    drops = result.drops
    assert drops["reason"].unique().to_list() == ["nic_queue_full"]
    assert drops["node"].unique().to_list() == ["h0"]
    # a larger txqueuelen holds more
    bigger = fabricsim.run(loads(text + "network: {host: {txqueuelen: 2000}}\n"))
    assert bigger.summary["peak_packets_alive"] > 1100
    assert bigger.drops["packets"].sum() < drops["packets"].sum()


def test_repeated_traffic_entries_stay_within_the_nic_queues():
    """The fuzz campaign's esg-fairness with its traffic entries repeated 50
    times: 6 sources offering 50 times their line rate keep at most
    txqueuelen packets each in their NICs."""
    import yaml

    doc = yaml.safe_load((ROOT / "scenarios" / "esg-fairness.yaml").read_text())
    doc["traffic"] = [dict(t, name=f"{t['name']}{i}") for i in range(50) for t in doc["traffic"]]
    doc["duration"] = "50us"
    result = fabricsim.run(loads(yaml.safe_dump(doc)))
    assert result.summary["conservation_ok"]
    # two classes in use (the ACL sets DSCP by class): a queue of 1000 each
    assert result.summary["peak_packets_alive"] < 6 * 2 * 1000 + 2000, result.summary["peak_packets_alive"]
    assert "nic_queue_full" in result.drops["reason"].to_list()


def test_a_world_larger_than_the_memory_left_is_refused_before_the_run(monkeypatch):
    """Input arbitration keeps a sub-queue per (egress port, class, input):
    a 1,000-port tomahawk-like switch with 8 classes takes about 0.47 GB (2,000
    hosts, 1.9 GB; 5,000 aborted the core at 11 GB). Refused when the machine
    has less left, with the estimate, before anything is built."""
    from fabricsim import machine_memory

    text = """
duration: 10us
network: {classes: 8, switch: {device: tomahawk-like}}
topology: {kind: star, hosts: 1000, link: {rate: 100Gbps, delay: 1us}}
traffic: []
"""
    monkeypatch.setattr(machine_memory, "available_bytes", lambda: 200 << 20)
    with pytest.raises(ScenarioError, match=r"topology: before the first event the world would take about 0\.4 GiB; .* 0\.2 GiB available"):
        fabricsim.check(loads(text))
    monkeypatch.setattr(machine_memory, "available_bytes", lambda: 8 << 30)
    fabricsim.check(loads(text))


def _flow_list(n: int) -> dict:
    return {
        "name": "many-flows",
        "duration": "1ms",
        "topology": {"kind": "star", "hosts": 4, "link": {"rate": "100Gbps", "delay": "1us"}},
        "traffic": [{"kind": "tcp_flows",
                     "flows": [{"src": f"h{i % 4}", "dst": f"h{(i + 1) % 4}", "size": 1000, "start": f"{i}ns"}
                               for i in range(n)]}],
    }


def test_an_explicit_flow_list_larger_than_the_memory_left_is_refused_naming_it(monkeypatch):
    """The fuzz campaign's 10^6 explicit flows ended in an internal
    MemoryError at 3.8 GB after 50 s. Validating a listed flow takes about
    1.7 KB (the document's copy, the model, the resolved form): refused before
    validation, naming the list, where that is more than is left."""
    from fabricsim import machine_memory
    from fabricsim.schema.scenario import from_dict

    monkeypatch.setattr(machine_memory, "available_bytes", lambda: 30 << 20)
    with pytest.raises(ScenarioError) as err:
        from_dict(_flow_list(20_000))
    assert err.value.issues[0].path == "traffic[0].flows"
    assert "validating 20,000 listed entries" in str(err.value) and "0.0 GiB available" in str(err.value)
    monkeypatch.setattr(machine_memory, "available_bytes", lambda: 8 << 30)
    assert len(from_dict(_flow_list(20_000)).traffic[0].flows) == 20_000


def test_a_yaml_document_too_large_to_read_is_refused_before_it_is_parsed(monkeypatch, tmp_path):
    """Reading YAML takes about 72 bytes per character at its peak (PyYAML
    composes the whole node tree first): a 53 MB flow list needs 3.7 GiB."""
    import yaml
    from fabricsim import machine_memory

    path = tmp_path / "flows.yaml"
    path.write_text(yaml.safe_dump(_flow_list(30_000)))
    assert path.stat().st_size > 1 << 20
    monkeypatch.setattr(machine_memory, "available_bytes", lambda: 20 << 20)
    with pytest.raises(ScenarioError, match=r"reading this \d+ MB document would take about 0\.\d GiB"):
        fabricsim.load(path)


def test_a_world_whose_flows_take_most_of_the_memory_names_the_traffic_entry(monkeypatch):
    from fabricsim import machine_memory
    from fabricsim.schema.scenario import from_dict

    scenario = from_dict(_flow_list(20_000))
    monkeypatch.setattr(machine_memory, "available_bytes", lambda: 10 << 20)
    with pytest.raises(ScenarioError, match=r"traffic\[0\]: before the first event the world would take .*\(fewer than its 20,000 flows"):
        fabricsim.check(scenario)


def test_an_error_with_many_issues_shows_the_first_twenty_and_counts_the_rest():
    """10^6 flows each with a bad start printed a million lines."""
    from fabricsim.schema.scenario import from_dict

    doc = _flow_list(1000)
    for i, flow in enumerate(doc["traffic"][0]["flows"]):
        flow["start"] = i + 1  # no unit
    with pytest.raises(ScenarioError) as err:
        from_dict(doc)
    assert len(err.value.issues) == 1000
    lines = str(err.value).splitlines()
    assert len(lines) == 21
    assert lines[-1] == "... and 980 more issues of the same scenario"
