"""The profile-guided build (scripts/build-pgo.sh): it builds, says so, and its
outputs are the plain build's bytes.

Slow (two builds of the package and the training mix, several minutes): run
with ``python -m pytest -m slow tests/python/test_pgo_build.py``. Skipped
where no llvm-profdata of rustc's LLVM version is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabricsim.bench.training import SHORT_RUNS, train

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "build-pgo.sh"


def test_training_names_a_missing_scenario(tmp_path):
    (tmp_path / "quickstart.yaml").write_text("name: q\n")
    first_missing = sorted(name for name in SHORT_RUNS if name != "quickstart")[0]
    with pytest.raises(FileNotFoundError, match=f"{first_missing}.yaml"):
        train(tmp_path)


def test_training_without_the_scenarios_says_where_it_looked(tmp_path):
    r = subprocess.run([sys.executable, "-m", "fabricsim.bench", "--train", "--scenarios", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert str(tmp_path) in r.stderr and "--scenarios DIR" in r.stderr and "Traceback" not in r.stderr


def test_unknown_argument_is_named():
    r = subprocess.run(["bash", str(SCRIPT), "--fast"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "'--fast'" in r.stderr and "--wheel-only" in r.stderr


@pytest.mark.slow
def test_profile_guided_wheel_reproduces_the_golden_outputs(tmp_path):
    work = tmp_path / "pgo"
    r = subprocess.run(["bash", str(SCRIPT), "--wheel-only", "--work", str(work)], capture_output=True, text=True)
    if r.returncode != 0 and "no llvm-profdata" in r.stderr:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr[-3000:]
    wheel = Path(r.stdout.strip().splitlines()[-1])
    assert wheel.is_file() and wheel.suffix == ".whl"
    assert (work / "fabricsim.profdata").stat().st_size > 0
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True)
    env = {**os.environ, "PYTHONPATH": str(site)}
    build = subprocess.run([sys.executable, "-c", "import fabricsim._core as c; print(c.BUILD)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout.strip()
    assert build == "optimized, profile-guided"
    # Every shipped scenario, run short, gives the golden snapshot's tables
    # with the profile-guided core too (pytest run in the process that
    # imported that core, so the tests cannot pick up another one).
    check = (
        "import sys, pytest, fabricsim, fabricsim._core as c\n"
        f"assert fabricsim.__file__.startswith({str(site)!r}), fabricsim.__file__\n"
        "assert c.BUILD == 'optimized, profile-guided', c.BUILD\n"
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', {str(ROOT / 'tests' / 'python' / 'test_golden.py')!r},"
        " '-k', 'reproduces_its_golden_output']))\n"
    )
    golden = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, cwd=ROOT)
    assert golden.returncode == 0, (golden.stdout + golden.stderr)[-3000:]
    assert f"{len(SHORT_RUNS)} passed" in golden.stdout
