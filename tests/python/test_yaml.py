"""Scenario YAML is read with libyaml when PyYAML has it, with the pure-Python parser's answers and messages."""

from pathlib import Path

import pytest
import yaml

import fabricsim
from fabricsim import ScenarioError
from fabricsim.schema import _yaml

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))

BAD = [
    "name: [unclosed\nduration: 1ms\n",  # libyaml: "did not find expected ',' or ']'"
    "duration: 1ms\nduration: 2ms\n",
    "duration: 1ms\n\ttopology: 1\n",
    "a: b: c\n",
    "a: *missing\n",
    "a:\n - 1\n b: 2\n",
    "x: &a {k: 1}\ny:\n  <<: *a\n  k: 2\n",  # a merged key given again counts as a duplicate
    "? [a]\n: 1\n",
    "a: !!python/object:os.system x\n",
    'a: "\\q"\n',
]


@pytest.fixture
def pure_python(monkeypatch):
    """Read and write with PyYAML's pure-Python classes only, as without libyaml."""
    monkeypatch.setattr(_yaml, "_FastStrictLoader", _yaml._StrictLoader)
    monkeypatch.setattr(_yaml, "_FAST_LOADER", yaml.SafeLoader)
    monkeypatch.setattr(_yaml, "_DUMPER", yaml.SafeDumper)


def _error(text):
    with pytest.raises(ScenarioError) as info:
        fabricsim.loads(text, source="s.yaml")
    return str(info.value)


def test_libyaml_is_used_when_available():
    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml")
    assert issubclass(_yaml._FastStrictLoader, yaml.CSafeLoader) and _yaml._DUMPER is yaml.CSafeDumper


@pytest.mark.parametrize("text", BAD)
def test_errors_read_the_same_with_and_without_libyaml(text, monkeypatch, pure_python):
    expected = _error(text)
    assert expected.startswith("s.yaml: invalid YAML at line ")
    monkeypatch.undo()
    assert _error(text) == expected


def test_known_errors_keep_their_messages():
    assert _error(BAD[0]) == "s.yaml: invalid YAML at line 2, column 9: expected ',' or ']', but got ':'"
    assert _error(BAD[1]) == "s.yaml: invalid YAML at line 2, column 1: duplicate key 'duration'"


def test_override_values_read_the_same_with_and_without_libyaml(monkeypatch, pure_python):
    path = ROOT / "scenarios" / "quickstart.yaml"
    with pytest.raises(ScenarioError) as info:
        fabricsim.load(path, ["traffic[0].rate=[1"])
    expected = str(info.value)
    assert "expected ',' or ']', but got '<stream end>'" in expected
    monkeypatch.undo()
    with pytest.raises(ScenarioError) as info:
        fabricsim.load(path, ["traffic[0].rate=[1"])
    assert str(info.value) == expected
    assert _yaml.parse_value("{a: 1, a: 2}") == {"a": 2}  # like yaml.safe_load: the last one wins


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_shipped_scenarios_read_and_write_the_same_with_and_without_libyaml(path, monkeypatch, pure_python):
    slow = fabricsim.load(path)
    slow_yaml = slow.to_yaml()
    monkeypatch.undo()
    fast = fabricsim.load(path)
    assert fast.source_data == slow.source_data
    assert fast.to_yaml() == slow_yaml


def test_written_yaml_is_the_same_with_and_without_libyaml_for_awkward_strings(monkeypatch, pure_python):
    document = {
        "description": "a long description with unicode (µs, é, →) that goes on well past the hundred-column "
        "line width so that the emitter has to fold it somewhere, with 'quotes', \"double quotes\" and: colons",
        "multi": "line one\nline two\n",
        "looks_like": ["yes", "1e3", "0x1F", "~", "", " padded ", "#hash", "- dash", "a: b", "@at", "10%"],
        "nested": {"list": [{"a": 1}, {"b": [1, 2.5, True, None]}]},
    }
    slow = _yaml.dump(document)
    monkeypatch.undo()
    assert _yaml.dump(document) == slow
    assert _yaml.parse(slow) == document


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_shipped_scenarios_write_back_without_warnings(path):
    """Writing a scenario back (scenario.yaml, the core's JSON) raises no pydantic serializer warning."""
    import warnings

    scenario = fabricsim.load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scenario.to_yaml()
        scenario.to_resolved()
