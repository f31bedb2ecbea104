"""Optional schema sections (pipelines, host models) build their validators on
first use: a scenario without them does not pay for them, one with them
validates, dumps and reports errors exactly as a plain nested model would."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fabricsim
from fabricsim.errors import ScenarioError

ROOT = Path(__file__).resolve().parents[2]


def test_sections_a_scenario_does_not_use_are_never_built():
    code = textwrap.dedent(
        f"""
        import json
        from fabricsim.schema import load
        from fabricsim.schema.host import HostModel
        from fabricsim.schema.pipeline import Pipeline
        built = lambda: [Pipeline.__pydantic_complete__, HostModel.__pydantic_complete__]
        out = [built()]
        load({str(ROOT / "scenarios" / "quickstart.yaml")!r}).to_resolved()
        out.append(built())
        load({str(ROOT / "scenarios" / "pt-sdn.yaml")!r}).to_resolved()
        out.append(built())
        print(json.dumps(out))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [[False, False], [False, False], [True, True]]


def _star(host: dict) -> dict:
    return {
        "name": "deferred",
        "duration": "1ms",
        "network": {"host": host},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate": "10Gbps", "delay": "1us"}},
        "traffic": [{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate": "1Gbps"}],
    }


def test_a_deferred_section_round_trips_through_yaml_like_any_other():
    host = {"model": {"preset": "linux-kernel", "cores": 2},
            "pipeline": {"rate": "100Mpps", "stages": [{"kind": "parse", "direction": "rx"}]}}
    sc = fabricsim.from_dict(_star(host))
    again = fabricsim.loads(sc.to_yaml())
    assert again.to_resolved() == sc.to_resolved()
    assert again.network.host.model.cores == 2


@pytest.mark.parametrize(
    ("host", "path"),
    [
        ({"model": {"cores": 0}}, "network.host.model.cores"),
        ({"pipeline": {"rate": "1Mpps", "stages": [{"kind": "parse", "direction": "up"}]}},
         "network.host.pipeline.stages[0].direction"),
    ],
)
def test_errors_in_a_deferred_section_name_the_full_field_path(host, path):
    with pytest.raises(ScenarioError) as err:
        fabricsim.from_dict(_star(host))
    assert path in str(err.value)


def test_only_the_kinds_a_scenario_uses_are_built():
    """Traffic and topology kinds build their validators the first time a scenario has them."""
    code = textwrap.dedent(
        f"""
        import json
        from fabricsim.schema import load, loads
        from fabricsim.schema.topology import Dumbbell, Explicit, FatTree, LeafSpine, Rail, Star
        from fabricsim.schema.traffic import TRAFFIC_MODELS
        models = [*TRAFFIC_MODELS, Star, Dumbbell, LeafSpine, FatTree, Rail, Explicit]
        built = lambda: sorted(model.__name__ for model in models if model.__pydantic_complete__)
        out = [built()]
        load({str(ROOT / "scenarios" / "quickstart.yaml")!r}).to_yaml()
        out.append(built())
        loads("duration: 1ms\\ntopology: {{kind: star, hosts: 2, link: {{rate: 10Gbps, delay: 1us}}}}\\n"
              "traffic: [{{kind: tcp_bulk, src: h0, dst: h1, size: 1MB}}]\\n")
        out.append(built())
        print(json.dumps(out))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [[], ["Burst", "LeafSpine", "UdpTraffic"],
                                       ["Burst", "LeafSpine", "Star", "TcpBulk", "UdpTraffic"]]


def test_an_entry_given_as_a_model_is_taken_as_it_is():
    sc = fabricsim.from_dict(_star({}))
    entry = sc.traffic[0]
    again = fabricsim.from_dict({**_star({}), "traffic": [entry], "topology": sc.topology})
    assert again.traffic[0] is not None and again.traffic[0].model_dump() == entry.model_dump()
    assert again.to_resolved() == sc.to_resolved()


@pytest.mark.parametrize(("traffic", "message"), [
    (["x"], "traffic[0]: expected a mapping, got 'x'"),
    ([None], "traffic[0]: expected a mapping, got null"),
    ([{}], "traffic[0].kind: required field is missing; allowed: udp_cbr, udp_poisson, burst"),
    ([{"kind": "nope"}], "traffic[0].kind: unknown value 'nope'; allowed: udp_cbr, udp_poisson, burst"),
    ([{"kind": "udp_cbr", "src": "h0", "dst": "h1", "rate": "1Gbps", "bogus": 1}],
     "traffic[0].bogus: unknown key 'bogus'; allowed: kind, name, src, dst"),
])
def test_errors_of_a_kind_built_on_first_use_name_the_entry(traffic, message):
    with pytest.raises(ScenarioError) as err:
        fabricsim.from_dict({**_star({}), "traffic": traffic})
    assert message in str(err.value)


def test_the_modules_of_pipelines_and_host_models_are_imported_only_for_a_scenario_with_one():
    code = textwrap.dedent(
        f"""
        import json, sys
        import fabricsim
        modules = ("fabricsim.schema.pipeline", "fabricsim.schema.host", "fabricsim.hosts")
        loaded = lambda: [name for name in modules if name in sys.modules]
        fabricsim.load({str(ROOT / "scenarios" / "quickstart.yaml")!r}).to_yaml()
        out = [loaded()]
        fabricsim.load({str(ROOT / "scenarios" / "pt-sdn.yaml")!r}).to_yaml()
        out.append(loaded())
        print(json.dumps(out))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [[], ["fabricsim.schema.pipeline", "fabricsim.schema.host", "fabricsim.hosts"]]


def test_no_optional_section_is_built_for_a_scenario_without_one():
    code = textwrap.dedent(
        f"""
        import json
        from fabricsim.schema import _base, load
        load({str(ROOT / "scenarios" / "quickstart.yaml")!r}).to_yaml()
        print(json.dumps([len(_base._DEFERRED), [cls.__name__ for cls in _base._DEFERRED if cls.__pydantic_complete__]]))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, built = json.loads(done.stdout)
    assert count >= 12 and built == []
