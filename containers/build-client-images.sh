#!/usr/bin/env bash
# Build the real-CLI images with no image registry (containers/README.md):
#   1. the local Debian base image (base-image/build.sh; skipped if present),
#   2. pairlab/claude and/or pairlab/codex on it, from the wheels uv.lock pins
#      (pairlab/adapters/client_images.py: fetched once on the host, verified, copied in).
# Usage: containers/build-client-images.sh [claude] [codex] [--force] [--force-base]
# Prints the built tags on stdout (alias, then version-input-hash tag, per image).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BASE_ARGS=()
ARGS=()
for arg in "$@"; do
  case "$arg" in
    --force-base) BASE_ARGS+=(--force) ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) ARGS+=("$arg") ;;
  esac
done

BASE_TAG="$("$HERE/base-image/build.sh" "${BASE_ARGS[@]}")"
cd "$HERE/.."
exec uv run --frozen python -m pairlab.adapters.client_images --base-image "$BASE_TAG" "${ARGS[@]}"
