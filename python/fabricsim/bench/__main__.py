"""``python -m fabricsim.bench --one NAME [--quick]``: run one bench scenario in this process, print its
measurements as JSON (``fabricsim bench`` runs each scenario this way, in a process of its own)."""

import argparse
import json

from fabricsim.bench.run import run_one
from fabricsim.bench.scenarios import SCENARIOS

parser = argparse.ArgumentParser(prog="python -m fabricsim.bench")
parser.add_argument("--one", required=True, choices=list(SCENARIOS))
parser.add_argument("--quick", action="store_true")
args = parser.parse_args()
print(json.dumps(run_one(args.one, args.quick)))
