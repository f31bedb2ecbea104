#!/usr/bin/env python3
"""CPU time (user + sys, from wait4) of the Python front end's start-up cases, each run N times.

    PYTHONPATH=python python scripts/startup-cpu.py [N] [PYTHONPATH ...]

Each PYTHONPATH given (default: ``python`` of this checkout) is measured in turn, the runs of the
trees interleaved so that a machine whose speed drifts treats them alike. Printed per case and
tree: min / median / max seconds, and for the runs the core's own wall time (``timing.json``).
Byte code is compiled first, as an installed package has it (``PYTHONDONTWRITEBYTECODE`` may be set).
"""

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "scenarios" / "quickstart.yaml")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    trees = [str(Path(t).resolve()) for t in sys.argv[2:]] or [str(ROOT / "python")]
    for tree in trees:
        compileall.compile_dir(tree, quiet=1)
    out = tempfile.mkdtemp(prefix="fabricsim-startup-")
    py = sys.executable
    cases = {
        "python -c pass": [py, "-c", "pass"],
        "import fabricsim": [py, "-c", "import fabricsim"],
        "import + load": [py, "-c", f"import fabricsim; fabricsim.load({QUICKSTART!r})"],
        "run --no-report": [py, "-m", "fabricsim", "run", QUICKSTART, "--no-report", "--no-progress", "--out", out],
        "run": [py, "-m", "fabricsim", "run", QUICKSTART, "--no-progress", "--out", out],
    }
    cpu: dict[tuple[str, str], list[float]] = {(c, t): [] for c in cases for t in trees}
    core: dict[tuple[str, str], list[float]] = {(c, t): [] for c in cases for t in trees}
    for _ in range(n):
        for case, command in cases.items():
            for tree in trees:
                env = dict(os.environ, PYTHONPATH=tree)
                child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                _, status, usage = os.wait4(child.pid, 0)
                if os.waitstatus_to_exitcode(status) != 0:
                    sys.exit(f"{case} failed with {tree}")
                cpu[(case, tree)].append(usage.ru_utime + usage.ru_stime)
                if case.startswith("run"):
                    core[(case, tree)].append(json.loads((Path(out) / "timing.json").read_text())["wall_time_s"])
    for case in cases:
        for tree in trees:
            xs = sorted(cpu[(case, tree)])
            line = f"{case:16} {xs[0]:.3f} / {statistics.median(xs):.3f} / {xs[-1]:.3f} s"
            if core[(case, tree)]:
                line += f"  (core {statistics.median(core[(case, tree)]):.3f} s)"
            print(line + (f"  {tree}" if len(trees) > 1 else ""))


if __name__ == "__main__":
    main()
