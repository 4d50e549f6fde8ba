#!/usr/bin/env bash
# Build the real-CLI images with no image registry (containers/README.md): the base image
# (if missing) and pairlab/claude and/or pairlab/codex from the wheels uv.lock pins, through
# the same `pairlab images build` as every other image (containers/images.yaml).
# Usage: containers/build-client-images.sh [claude] [codex] [--force]
# Prints the built tags on stdout.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE/.."
ARGS=()
for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) ARGS+=("$arg") ;;
  esac
done
names=0
for arg in "${ARGS[@]}"; do [[ "$arg" == --* ]] || names=1; done
[[ $names -eq 1 ]] || ARGS+=(claude codex)
exec uv run --frozen pairlab images build "${ARGS[@]}"
