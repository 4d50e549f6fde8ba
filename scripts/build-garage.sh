#!/usr/bin/env bash
# Build the pinned Garage binary once, from the Rust crate registry, cached by version:
#   ~/.cache/pairlab/garage/<version>/bin/garage   (PAIRLAB_GARAGE_BIN overrides the path)
# Does nothing when that binary exists (CI calls this on every run: cold about 20-26 min on
# two busy cores, warm 0 s). Needs cargo (rustup) and a C compiler.
# Usage: scripts/build-garage.sh [--force]      Prints the binary's path on stdout.
set -euo pipefail
VERSION="$(sed -n 's/^GARAGE_VERSION: Final = "\(.*\)"$/\1/p' "$(dirname "$0")/../pairlab/adapters/garage.py")"
ROOT="${HOME}/.cache/pairlab/garage/${VERSION}"
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
echo "build-garage: cargo install garage --locked --version $VERSION (about 20 min)" >&2
start=$(date +%s)
cargo install garage --locked --version "$VERSION" --root "$ROOT" >&2
echo "build-garage: built in $(( $(date +%s) - start )) s" >&2
echo "$ROOT/bin/garage"
