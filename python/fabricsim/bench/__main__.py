"""``python -m fabricsim.bench --one NAME [--quick]``: run one bench scenario in this process, print its
measurements as JSON (``fabricsim bench`` runs each scenario this way, in a process of its own).

``python -m fabricsim.bench --dump NAME [--quick]``: print the resolved scenario (the core's JSON), for
running it without Python (``cargo run --release -p fabricsim-core --example run_json -- FILE``), under
``perf`` or valgrind.

``python -m fabricsim.bench --train [--scenarios DIR]``: run the training mix of a profile-guided build
(:mod:`fabricsim.bench.training`; ``scripts/build-pgo.sh`` runs it)."""

import argparse
import json

from fabricsim.bench.run import run_one
from fabricsim.bench.scenarios import SCENARIOS

parser = argparse.ArgumentParser(prog="python -m fabricsim.bench")
what = parser.add_mutually_exclusive_group(required=True)
what.add_argument("--one", choices=list(SCENARIOS), help="run one scenario and print its measurements")
what.add_argument("--dump", choices=list(SCENARIOS), help="print the resolved scenario JSON")
what.add_argument("--train", action="store_true", help="run the training mix of a profile-guided build")
parser.add_argument("--quick", action="store_true")
parser.add_argument("--scenarios", help="with --train: the checkout's scenarios/ directory")
args = parser.parse_args()
if args.train:
    from fabricsim.bench.training import main

    raise SystemExit(main(args.scenarios))
if args.dump:
    print(json.dumps(SCENARIOS[args.dump](args.quick)))
else:
    print(json.dumps(run_one(args.one, args.quick)))
