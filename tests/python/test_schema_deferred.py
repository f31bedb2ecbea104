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
