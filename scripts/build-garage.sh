#!/usr/bin/env bash
# Build the pinned Garage binary once, from the Rust crate registry, cached by version and
# features (only what the project uses: pairlab/adapters/store/garage.py GARAGE_FEATURES):
#   ~/.cache/pairlab/garage/<version>-<features joined by +>/bin/garage
# (PAIRLAB_GARAGE_BIN overrides the path). Does nothing when that binary exists (CI calls
# this on every run, in the background: cold ~12 min on two busy cores, warm 0 s).
# Needs cargo (rustup) and a C compiler.
# Usage: scripts/build-garage.sh [--force]      Prints the binary's path on stdout.
set -euo pipefail
GARAGE_PY="$(dirname "$0")/../pairlab/adapters/store/garage.py"
VERSION="$(sed -n 's/^GARAGE_VERSION: Final = "\(.*\)"$/\1/p' "$GARAGE_PY")"
FEATURES="$(sed -n 's/^GARAGE_FEATURES: Final = "\(.*\)"$/\1/p' "$GARAGE_PY")"
ROOT="${HOME}/.cache/pairlab/garage/${VERSION}-${FEATURES//,/+}"
BIN="${PAIRLAB_GARAGE_BIN:-$ROOT/bin/garage}"
if [[ "${1:-}" != "--force" && -x "$BIN" ]]; then
  echo "build-garage: $BIN present ($("$BIN" --version 2>/dev/null | head -n1))" >&2
  echo "$BIN"
  exit 0
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "build-garage: cargo is not installed (https://rustup.rs) [build-prerequisite-missing]" >&2
  exit 3
fi
# Only one build at a time per machine (a second caller waits, then finds the binary).
mkdir -p "$ROOT"
exec 9>"$ROOT/.build.lock"
flock 9
if [[ "${1:-}" != "--force" && -x "$BIN" ]]; then echo "$BIN"; exit 0; fi
# Optimisation level 1, not the release default 3: the tests and the stack move small objects,
# and on two cores the build is CI's longest single job (bench/README.md: the CPU time of
# both levels). PAIRLAB_GARAGE_OPT_LEVEL=3 builds the release default.
export CARGO_PROFILE_RELEASE_OPT_LEVEL="${PAIRLAB_GARAGE_OPT_LEVEL:-1}"
echo "build-garage: cargo install garage --locked --no-default-features --features $FEATURES --version $VERSION, opt-level $CARGO_PROFILE_RELEASE_OPT_LEVEL (about 12 min)" >&2
start=$(date +%s)
cargo install garage --locked --no-default-features --features "$FEATURES" --version "$VERSION" --root "$ROOT" >&2
echo "build-garage: built in $(( $(date +%s) - start )) s" >&2
echo "$ROOT/bin/garage"
