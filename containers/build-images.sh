#!/usr/bin/env bash
# Build the images pairlab needs, with no image registry:
#   1. the local Debian base image (containers/base-image/build.sh; skipped if present),
#   2. pairlab/simclient:<version> on top of it (docker build --pull=false).
# Usage: containers/build-images.sh [--force-base]
# Prints the built tags on stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BASE_ARGS=()
for arg in "$@"; do
  case "$arg" in
    --force-base) BASE_ARGS+=(--force) ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "build-images.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

BASE_TAG="$("$HERE/base-image/build.sh" "${BASE_ARGS[@]}")"
VERSION="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$HERE/simclient/pairlab_simclient/__init__.py")"
if [[ -z "$VERSION" ]]; then
  echo "build-images.sh: cannot read __version__ from pairlab_simclient" >&2
  exit 3
fi
SIM_TAG="pairlab/simclient:$VERSION"
echo "images: building $SIM_TAG on $BASE_TAG" >&2
docker build --pull=false \
  --build-arg "BASE_IMAGE=$BASE_TAG" \
  --build-arg "SIMCLIENT_VERSION=$VERSION" \
  --label "pairlab.image=simclient" \
  -t "$SIM_TAG" "$HERE/simclient" >&2
echo "$BASE_TAG"
echo "$SIM_TAG"
