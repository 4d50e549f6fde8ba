#!/usr/bin/env bash
# Build the images pairlab needs, with no image registry: the images of
# containers/images.yaml through `pairlab images build` (idempotent: an image whose input
# hash is unchanged is reused). Default: the base image and pairlab/simclient.
# Usage: containers/build-images.sh [NAME...] [--force]
# Prints the built tags on stdout (progress on stderr).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE/.."
ARGS=()
for arg in "$@"; do
  case "$arg" in
    --force-base) echo "build-images.sh: --force-base is gone: pairlab images build base --force" >&2; exit 2 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) ARGS+=("$arg") ;;
  esac
done
[[ ${#ARGS[@]} -gt 0 ]] || ARGS=(base simclient)
exec uv run --frozen pairlab images build "${ARGS[@]}"
