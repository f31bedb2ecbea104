"""``fabricsim bench --htsim DIR``: the equal-work twins, the drivers' output, skipping what is not built."""

import json
import os
import stat
from pathlib import Path

import pytest

from fabricsim.bench import htsim
from fabricsim.cli.main import main
from fabricsim.schema import from_dict


def test_the_twins_are_valid_scenarios_of_the_drivers_work():
    incast = from_dict(htsim.incast_twin(5_000_000)).to_resolved()
    (flows,) = incast["traffic"]
    assert len(flows["src"]) == 16 and incast["tcp"]["min_rto_ps"] == 250_000_000_000
    assert incast["tcp"]["delack_count"] == 1
    partner = htsim.permutation(16, seed=4)
    assert sorted(partner) == list(range(16)) and all(i != d for i, d in enumerate(partner))
    assert partner == htsim.permutation(16, seed=4)
    tree = from_dict(htsim.fattree_twin(4, partner, 2_000_000)).to_resolved()
    assert tree["topology"]["k"] == 4 and len(tree["traffic"][0]["flows"]) == 16
    matrix = htsim.connection_matrix(partner, 2_000_000).splitlines()
    assert matrix[:2] == ["Nodes 16", "Connections 16"]
    assert matrix[2] == f"0->{partner[0]} id 1 start 0 size 2000000"


def test_the_dctcp_twins_mark_as_htsims_queues_and_run_its_dctcp():
    scenario, args, files = htsim.PAIRS["fattree-k8-dctcp"](True)
    assert args[:5] == ["128", "perm_128n.cm", "100", "10", "dctcp"] and list(files) == ["perm_128n.cm"]
    resolved = from_dict(scenario).to_resolved()
    assert resolved["tcp"]["cc"] == "dctcp" and resolved["tcp"]["dctcp_g"] == 1 / 16
    ecn = resolved["network"]["switch"]["ecn"]
    assert ecn["kmin_bytes"] == ecn["kmax_bytes"] == 15 * 1500 and ecn["pmax"] == 1.0
    newreno, newreno_args, _ = htsim.PAIRS["fattree-k8"](True)
    assert newreno_args[4] == "tcp" and "ecn" not in newreno["network"]["switch"]
    assert newreno["traffic"] == scenario["traffic"]
    assert htsim.DRIVERS["fattree-k16-dctcp"] == "tcp_fattree_cpu"


def test_a_drivers_result_line_is_read_by_key():
    text = "Setting flow size to 1\nRESULT tool=htsim-tcp events=42 loop_cpu_s=0.5 jct_s=0.25\n"
    assert htsim.parse_result(text) == {"tool": "htsim-tcp", "events": "42", "loop_cpu_s": "0.5", "jct_s": "0.25"}
    with pytest.raises(ValueError):
        htsim.parse_result("no result here\n")


def test_missing_drivers_are_skipped_by_name(tmp_path, capsys):
    assert main(["bench", "--htsim", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["results"] == report["spray"] == [] and report["skipped"] == [*htsim.PAIRS, "spray-k8"]
    assert report["missing"] == [str(tmp_path / "tcp_incast_cpu"), str(tmp_path / "tcp_fattree_cpu"),
                                 str(tmp_path / "htsim_eqds")]
    assert main(["bench", "--htsim", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"skipped incast-16: {tmp_path / 'tcp_incast_cpu'} not found" in err
    assert main(["bench", "--pair", "incast-16"]) == 2
    assert "--pair: only with --htsim or --ns3" in capsys.readouterr().err


def test_a_pair_runs_both_sides_in_rounds(core, tmp_path, capsys):
    driver = tmp_path / "tcp_fattree_cpu"
    driver.write_text("#!/bin/sh\ntest -f \"$2\" || exit 3\n"
                      "echo 'RESULT tool=htsim-tcp events=50000 jct_s=0.001 loop_cpu_s=0.01'\n")
    driver.chmod(driver.stat().st_mode | stat.S_IXUSR)
    assert os.access(driver, os.X_OK)
    assert main(["bench", "--htsim", str(tmp_path), "--pair", "fattree-k4", "--quick", "--rounds", "2",
                 "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["pair"] == "fattree-k4" and result["rounds"] == 2 and result["htsim_events"] == 50000
    assert result["fabricsim_events"] > 0 and 0 < result["fabricsim_jct_s"] < 1
    assert len(result["loop_cpu_ratio"]) == len(result["run_process_cpu_ratio"]) == 2
    assert result["fabricsim_run_process_cpu_s"] > 0


def test_unknown_pairs_are_refused(tmp_path, capsys):
    assert main(["bench", "--htsim", str(tmp_path), "--pair", "nope"]) == 2
    assert "unknown htsim pair 'nope'" in capsys.readouterr().err
