"""``fabricsim bench --ns3 --pair NAME``: the fat-tree pairs against their ns-3 twin, in rounds."""

import json
import sys

import pytest

from fabricsim.bench import htsim, ns3_pairs
from fabricsim.cli.main import main


def test_the_pairs_are_the_htsim_fat_tree_pairs_and_their_ns3_command():
    assert ns3_pairs.NS3_PAIRS == htsim.FATTREE_PAIRS and "fattree-k8-dctcp" in ns3_pairs.NS3_PAIRS
    command = ns3_pairs.ns3_command("fattree-k8-dctcp", quick=True)
    assert command[1:] == ["-m", "fabricsim.validation.ns3", "fattree", "--k", "8", "--dctcp",
                           "--bytes-per-flow", "200000", "--json"]
    assert "--dctcp" not in ns3_pairs.ns3_command("fattree-k16", quick=False)
    assert ns3_pairs.ns3_command("fattree-k16", quick=False)[-2] == "2000000"


def test_unknown_pairs_are_refused(capsys):
    assert main(["bench", "--ns3", "--pair", "incast-16"]) == 2
    assert "unknown ns-3 pair 'incast-16'" in capsys.readouterr().err


def test_a_pair_runs_both_sides_in_rounds(core, monkeypatch, capsys):
    fake = {"completed": True, "params": {"k": 4}, "cpu_s": 0.5, "wall_s": 0.6, "events": 80000, "jct_s": 0.0013}
    script = f"import json; print(json.dumps({fake!r}))"
    monkeypatch.setattr(ns3_pairs, "ns3_command", lambda name, quick: [sys.executable, "-c", script])
    monkeypatch.setattr(ns3_pairs.importlib.util, "find_spec", lambda name: object())
    assert main(["bench", "--ns3", "--pair", "fattree-k4", "--quick", "--rounds", "2", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["pair"] == "fattree-k4" and result["rounds"] == 2
    assert result["ns3_events"] == 80000 and result["ns3_loop_cpu_s"] == 0.5 and result["ns3_jct_s"] == 0.0013
    assert result["fabricsim_events"] > 0 and 0 < result["fabricsim_jct_s"] < 1
    assert len(result["loop_cpu_ratio"]) == len(result["run_process_cpu_ratio"]) == 2
    assert result["loop_cpu_ratio"][0] == pytest.approx(result["fabricsim_loop_cpu_s"] / 0.5, rel=0.5)


def test_an_incomplete_ns3_run_is_an_error():
    with pytest.raises(RuntimeError, match="not every flow completed"):
        ns3_pairs._ns3_fields(json.dumps({"completed": False, "params": {"k": 8}}))
