#!/usr/bin/env bash
# Builds the fabricsim package with a profile-guided core and installs it into
# the current Python environment (as `pip install .` would, replacing what is
# there, an editable install too), or only writes the wheel with --wheel-only.
#
#   scripts/build-pgo.sh [--wheel-only] [--work DIR]
#
# Steps: build the core instrumented (rustc -Cprofile-generate), install that
# build in an environment of its own under the work directory (default
# target/pgo), run the training mix (`python -m fabricsim.bench --train`: every bench
# scenario at its --quick size, every shipped scenario short), merge the counts
# with llvm-profdata, build again with them (-Cprofile-use) and install the
# result. `python -c 'import fabricsim._core as c; print(c.BUILD)'` and the
# title of `fabricsim bench` then read "optimized, profile-guided". Outputs are
# the same bytes as with the plain build; only speed differs (BENCHMARKS.md,
# "Profile-guided builds").
#
# Needs llvm-profdata of the LLVM version rustc was built with: rustup's
# llvm-tools component (`rustup component add llvm-tools`), or a distribution's
# `llvm-profdata-N` (Debian: `apt-get install llvm-N`) with N that version's
# major number. Installs maturin into the current environment if missing. Takes
# two builds of the package plus about half a minute of training.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=""
wheel_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --wheel-only) wheel_only=1 ;;
    --work) shift; work=${1:?--work needs a directory} ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-pgo.sh: unknown argument '$1' (allowed: --wheel-only, --work DIR)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$work" ] || work="$repo/target/pgo"
mkdir -p "$work"
work=$(cd "$work" && pwd)

llvm_major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
host=$(rustc -vV | sed -n 's/^host: //p')
if [ -z "$llvm_major" ]; then
  echo "build-pgo.sh: could not read rustc's LLVM version from 'rustc -vV'" >&2
  exit 1
fi

# llvm-profdata whose major version is rustc's LLVM's.
profdata=""
for candidate in "$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata" \
                 "llvm-profdata-$llvm_major" "/usr/lib/llvm-$llvm_major/bin/llvm-profdata" "llvm-profdata"; do
  if command -v "$candidate" >/dev/null 2>&1 || [ -x "$candidate" ]; then
    version=$("$candidate" --version 2>/dev/null | sed -n 's/.*LLVM version \([0-9]*\).*/\1/p' | head -n1)
    if [ "$version" = "$llvm_major" ]; then
      profdata=$candidate
      break
    fi
  fi
done
if [ -z "$profdata" ]; then
  echo "build-pgo.sh: no llvm-profdata of LLVM $llvm_major (rustc's) found; install one with" >&2
  echo "  rustup component add llvm-tools     or     apt-get install llvm-$llvm_major" >&2
  exit 1
fi
echo "build-pgo.sh: rustc's LLVM $llvm_major, $profdata" >&2

command -v maturin >/dev/null || python -m pip install -q maturin
# Builds of their own, so that the flags do not force a rebuild of target/.
export CARGO_TARGET_DIR="$work/target"
rm -rf "$work/profiles" "$work/instrumented" "$work/wheel"
mkdir -p "$work/profiles"

echo "build-pgo.sh: 1/4 building the instrumented core" >&2
(cd "$repo" && FABRICSIM_PGO=generate RUSTFLAGS="-Cprofile-generate=$work/profiles" \
  maturin build --release --quiet --out "$work/instrumented")
# The instrumented build runs in an environment of its own that sees this
# one's packages (its dependencies) behind it.
rm -rf "$work/venv"
python -m venv "$work/venv"
here=$(python -c 'import site, sys; print("\n".join(p for p in site.getsitepackages() if p.startswith(sys.prefix)))')
own=$("$work/venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')
printf '%s\n' "$here" > "$own/zz_build_pgo_deps.pth"
# Forced: pip would otherwise take the package it sees behind as this one.
"$work/venv/bin/python" -m pip install -q --force-reinstall --no-deps "$work"/instrumented/*.whl
"$work/venv/bin/python" -m pip install -q "$work"/instrumented/*.whl
trainee=$(cd "$work" && "$work/venv/bin/python" -c 'import fabricsim._core as c; print(c.BUILD)')
if [ "$trainee" != "instrumented for profiling (slow)" ]; then
  echo "build-pgo.sh: the training environment imports a core built '$trainee', not the instrumented one" >&2
  exit 1
fi

echo "build-pgo.sh: 2/4 training" >&2
(cd "$work" && "$work/venv/bin/python" -m fabricsim.bench --train --scenarios "$repo/scenarios")

echo "build-pgo.sh: 3/4 merging the profiles" >&2
"$profdata" merge -o "$work/fabricsim.profdata" "$work/profiles"
# The build's proc macros write counts too; the core's must be there.
"$profdata" show --all-functions "$work/fabricsim.profdata" > "$work/functions.txt"
if ! grep -q 'fabricsim_core.*Simulation.*advance' "$work/functions.txt"; then
  echo "build-pgo.sh: the training recorded no counts for the core's event loop ($work/profiles)" >&2
  exit 1
fi

echo "build-pgo.sh: 4/4 building the profile-guided core" >&2
(cd "$repo" && FABRICSIM_PGO=use RUSTFLAGS="-Cprofile-use=$work/fabricsim.profdata" \
  maturin build --release --quiet --out "$work/wheel")
wheel=$(ls "$work"/wheel/*.whl)
if [ "$wheel_only" = 1 ]; then
  echo "$wheel"
else
  python -m pip install -q --force-reinstall --no-deps "$wheel"
  python -m pip install -q "$wheel"
  (cd "$work" && python -c 'import fabricsim._core as c; print("installed fabricsim core:", c.BUILD)')
fi
