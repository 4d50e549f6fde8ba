#!/usr/bin/env bash
# System packages the tests need beyond Python: Debian's chromium for the browser
# tests, debootstrap for the registry-free base image, docker-compose for the stack. Idempotent; quiet when present.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
# the team stack's tests drive infra/compose.yaml (the compose plugin, else Debian's v1)
docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 \
  || need+=(docker-compose)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-system-deps: need root to install: ${need[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
