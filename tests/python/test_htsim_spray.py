"""Packet spraying against htsim (``fabricsim bench --htsim DIR --pair spray-k8``): the closed form, the
fabricsim side on its own, the comparison's plumbing with a stand-in htsim, and, where an htsim build is
named by ``FABRICSIM_HTSIM_DIR``, the agreement band measured against htsim's EQDS and NDP."""

import json
import os
import stat
from pathlib import Path

import pytest

from fabricsim.bench import htsim, htsim_spray
from fabricsim.cli.main import main
from fabricsim.schema import from_dict

HTSIM_DIR = os.environ.get("FABRICSIM_HTSIM_DIR")


def _partner():
    return htsim.permutation(htsim_spray.HOSTS, seed=htsim_spray.SEED)


def test_the_closed_form_counts_wire_bytes_store_and_forward_and_the_round_trip():
    # Host 0 to hosts under the same edge switch (2 links), in the same pod (4) and across pods (6).
    # 489 frames: 488 of 4,160 B and one of 1,152 + 64 B; 2,031,296 B at 100G = 162.50368 us; a full
    # frame's store-and-forward 0.3328 us per switch; 1 us per link out and back.
    same_edge, same_pod, across = htsim_spray.closed_form([1, 4, 16], size=2_000_000)
    assert same_edge == pytest.approx(162.50368 + 1 * 0.3328 + 4.0)
    assert same_pod == pytest.approx(162.50368 + 3 * 0.3328 + 8.0)
    assert across == pytest.approx(162.50368 + 5 * 0.3328 + 12.0)


def test_the_twin_is_the_fabric_of_the_htsim_runs():
    resolved = from_dict(htsim_spray.spray_twin(_partner(), "spray_random")).to_resolved()
    assert resolved["topology"]["k"] == 8 and len(resolved["traffic"]) == 128
    roce = resolved["roce"]
    assert (roce["mtu_bytes"], roce["header_bytes"], roce["recovery"], roce["dupthresh"]) == (
        4096, 64, "selective_repeat", 64)
    assert resolved["network"]["switch"]["buffer"]["port_bytes"] == 50 * 4160
    eqds = htsim_spray.htsim_args("m.cm", htsim_spray.HTSIM_RUNS[0][2])
    assert eqds[eqds.index("-mtu") + 1] == "4160" and eqds[eqds.index("-linkspeed") + 1] == "100000"


def test_finished_lines_are_read_from_eqds_and_ndp_and_a_missing_flow_is_an_error():
    text = ("Flow Eqds_0_7 flowId 1 eqdsSrc 0 finished at 170.5 total packets 489 RTS 0 total bytes 2002944\n"
            "New: 1 Rtx: 0\nFlow ndp_1_0 flow_id 2 finished at 1.5e2 total bytes 2000960\n")
    assert htsim_spray.parse_finished(text, 2) == [170.5, 150.0]
    with pytest.raises(ValueError, match="finished 2 of 3 flows"):
        htsim_spray.parse_finished(text, 3)


def test_fabricsim_sprays_the_permutation_near_full_bisection_where_ecmp_collides(core):
    """Without htsim, four seeds: round-robin spraying keeps every flow within 5 % of its closed form, with
    no loss; random spraying the median within 10 % and the p99 within 20 % (queues of critically loaded
    downlinks); a run without a timeout keeps its slowest flow within 20 %; per-flow ECMP more than doubles
    the slowest flow's time."""
    result = htsim_spray.compare(None)
    rows = {r["row"]: r for r in result["rows"]}
    assert list(rows) == ["closed form", *(label for label, _, _ in htsim_spray.FABRICSIM_MODES)]
    random_, rr, ecmp, random_trim, rr_trim = (rows[label] for label, _, _ in htsim_spray.FABRICSIM_MODES)
    ideal = rows["closed form"]["max_us"]
    assert 1.0 < rr["median_x_ideal"] and rr["max_x_ideal"] < 1.05
    assert rr["dropped"] == rr["timeouts"] == 0
    assert 1.0 < random_["median_x_ideal"] < 1.10 and random_["p99_x_ideal"] < 1.2
    calm = [m for m, t in zip(random_["max_per_seed_us"], random_["timeouts_per_seed"]) if t == 0]
    assert calm and max(calm) < 1.2 * ideal
    assert ecmp["max_x_ideal"] > 2.0 and ecmp["dropped"] > 1000
    # Trimming: a full queue forwards the header and the receiver asks for that packet at once, so no
    # flow waits for a timeout and every seed's slowest flow stays within 20 % of the closed form.
    for row in (random_trim, rr_trim):
        assert row["dropped"] == row["timeouts"] == 0
        assert max(row["max_per_seed_us"]) < 1.2 * ideal
    assert random_trim["trimmed"] > 0 and random_trim["median_x_ideal"] < 1.10


def test_the_pair_runs_every_htsim_main_that_is_built(core, tmp_path, capsys):
    """A stand-in htsim_eqds that reads its connection matrix and finishes every flow at 190 us: its rows
    come with their ratios to the closed form; htsim_ndp, absent, gives none."""
    driver = tmp_path / "htsim_eqds"
    driver.write_text("#!/bin/sh\nwhile [ \"$1\" != -tm ]; do shift; done\n"
                      "sed -n 's/^\\([0-9]*\\)->\\([0-9]*\\).*/Flow Eqds_\\1_\\2 flowId 1 finished at 190/p' \"$2\"\n"
                      "echo 'New: 62592 Rtx: 5 RTS: 0 Bounced: 0'\n")
    driver.chmod(driver.stat().st_mode | stat.S_IXUSR)
    assert main(["bench", "--htsim", str(tmp_path), "--pair", "spray-k8", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["spray"]
    rows = {r["row"]: r for r in result["rows"]}
    eqds = rows["htsim EQDS, -paths 4096"]
    assert eqds["median_us"] == eqds["max_us"] == 190.0 and eqds["max_per_seed_us"] == [190.0] * 4
    assert eqds["retransmitted"] == 4 * 5  # summed over the seeds
    assert eqds["max_x_ideal"] == pytest.approx(190.0 / rows["closed form"]["max_us"], abs=1e-4)
    assert not any(name.startswith("htsim NDP") for name in rows)
    assert main(["bench", "--htsim", str(tmp_path), "--pair", "spray-k8"]) == 0
    assert "htsim EQDS, -paths 4096" in capsys.readouterr().out


@pytest.mark.skipif(not HTSIM_DIR, reason="set FABRICSIM_HTSIM_DIR to an htsim build (htsim_eqds, htsim_ndp)")
def test_spraying_agrees_with_htsim_eqds_and_ndp(core):
    """The band measured against htsim (docs/validation/htsim-spraying.md): fabricsim's random spraying
    within 3 % of EQDS with a distinct entropy per packet in median, p99 and each seed's slowest flow (where
    fabricsim had no timeout); NDP's source spraying within 7 % of fabricsim's (random and round robin);
    every htsim row above the closed form."""
    directory = Path(HTSIM_DIR)
    for name in ("htsim_eqds", "htsim_ndp"):
        assert os.access(directory / name, os.X_OK), directory / name
    rows = {r["row"]: r for r in htsim_spray.compare(directory)["rows"]}
    for htsim_row, ours, band in [("htsim EQDS, -paths 4096", "fabricsim RoCE, spray_random", 0.03),
                                  ("htsim NDP, -strat rand", "fabricsim RoCE, spray_random", 0.07),
                                  ("htsim NDP, -strat perm", "fabricsim RoCE, spray_rr", 0.07)]:
        theirs, mine = rows[htsim_row], rows[ours]
        for key in ("median_us", "p99_us"):
            assert abs(mine[key] / theirs[key] - 1) < band, (htsim_row, key)
        # The slowest flow of each seed's run, where fabricsim waited out no timeout (a loss no later
        # packet reports: htsim trims instead of dropping, and resends at once).
        for seed, (m, h, t) in enumerate(zip(mine["max_per_seed_us"], theirs["max_per_seed_us"],
                                             mine["timeouts_per_seed"]), 1):
            assert t > 0 or abs(m / h - 1) < band, (htsim_row, seed)
    # With trimming as htsim's queues do it, random spraying is within 3 % of EQDS in median, p99 and the
    # slowest flow of all runs, within 5 % in each seed's slowest flow (the two draw their random choices
    # differently, so a seed is no common sample), and resends about as many trimmed packets (within 25 %).
    theirs, mine = rows["htsim EQDS, -paths 4096"], rows["fabricsim RoCE, spray_random + trimming"]
    for key in ("median_us", "p99_us", "max_us"):
        assert abs(mine[key] / theirs[key] - 1) < 0.03, key
    for seed, (m, h) in enumerate(zip(mine["max_per_seed_us"], theirs["max_per_seed_us"]), 1):
        assert abs(m / h - 1) < 0.05, seed
    assert abs(mine["trimmed"] / theirs["retransmitted"] - 1) < 0.25
    for name, row in rows.items():
        if name.startswith("htsim"):
            assert row["median_x_ideal"] >= 1.0, name


def test_an_htsim_run_that_leaves_flows_unfinished_is_named(core, tmp_path, capsys):
    driver = tmp_path / "htsim_eqds"
    driver.write_text("#!/bin/sh\necho 'Flow Eqds_0_1 flowId 1 finished at 190'\n")
    driver.chmod(driver.stat().st_mode | stat.S_IXUSR)
    assert main(["bench", "--htsim", str(tmp_path), "--pair", "spray-k8"]) == 2
    assert f"{driver} (seed 1): htsim finished 1 of 128 flows" in capsys.readouterr().err
