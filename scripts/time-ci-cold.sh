#!/usr/bin/env bash
# Time `.ci/run` as on a fresh machine: a fresh clone of REF, an empty HOME (no
# ~/.cache/pairlab, no uv cache, no Prefect home) and a new image prefix (every image and its
# Docker build cache new). rustup's toolchain stays where it is (CARGO_HOME/RUSTUP_HOME).
# Usage: scripts/time-ci-cold.sh LABEL [REF]   -> /tmp/pairlab-ci-runs/LABEL/{ci.log,logs/}
# Afterwards remove its images: docker images --format '{{.Repository}}:{{.Tag}}' 'ci<label>/*' | xargs docker rmi
set -u
LABEL=${1:?usage: scripts/time-ci-cold.sh LABEL [REF]}; REF=${2:-HEAD}
SRC="$(cd "$(dirname "$0")/.." && pwd)"
ROOT=${PAIRLAB_CI_RUNS:-/tmp/pairlab-ci-runs}/$LABEL
rm -rf "$ROOT"; mkdir -p "$ROOT/home"
git clone -q --no-hardlinks "$SRC" "$ROOT/repo" && git -C "$ROOT/repo" checkout -q "$(git -C "$SRC" rev-parse "$REF")"
cd "$ROOT/repo"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export HOME="$ROOT/home" PATH="$CARGO_HOME/bin:$PATH"
export PAIRLAB_IMAGE_PREFIX="ci${LABEL//[^a-z0-9]/}/" PAIRLAB_CI_LOGS="$ROOT/logs"
start=$(date +%s)
bash .ci/run > "$ROOT/ci.log" 2>&1
rc=$?
echo "time-ci-cold: rc=$rc wall=$(( $(date +%s) - start )) s commit=$(git rev-parse --short HEAD)" | tee -a "$ROOT/ci.log"
exit $rc
