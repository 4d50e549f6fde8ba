#!/usr/bin/env bash
# Build a local Debian base image (bookworm + python3) with no image registry:
# debootstrap --variant=minbase into a temp dir, then `docker import`.
# The Debian mirror is read from this machine's apt sources (never hard-coded).
#
# Usage: containers/base-image/build.sh [--force] [--tag TAG] [--suite SUITE]
# Prints the image tag on stdout (progress goes to stderr).
set -euo pipefail

TAG="pairlab/base:bookworm-python3"
SUITE="bookworm"
FORCE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --force) FORCE=1; shift ;;
    --tag) TAG="$2"; shift 2 ;;
    --suite) SUITE="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

log() { echo "base-image: $*" >&2; }

if [[ $FORCE -eq 0 ]] && docker image inspect "$TAG" >/dev/null 2>&1; then
  log "$TAG already exists (use --force to rebuild)"
  echo "$TAG"
  exit 0
fi

# The first configured mirror that serves $SUITE itself (not -updates/-security).
find_mirror() {
  local f
  shopt -s nullglob
  for f in /etc/apt/sources.list.d/*.sources; do
    # deb822 stanzas are separated by blank lines.
    awk -v suite="$SUITE" '
      BEGIN { RS=""; FS="\n" }
      {
        uris=""; suites=""; types=""
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^[Uu][Rr][Ii][Ss]:/)    { sub(/^[^:]*:[ \t]*/, "", $i); uris=$i }
          if ($i ~ /^[Ss]uites:/)           { sub(/^[^:]*:[ \t]*/, "", $i); suites=$i }
          if ($i ~ /^[Tt]ypes:/)            { sub(/^[^:]*:[ \t]*/, "", $i); types=$i }
        }
        n = split(suites, s, /[ \t]+/)
        if (types ~ /(^|[ \t])deb([ \t]|$)/) {
          for (j = 1; j <= n; j++) if (s[j] == suite) { split(uris, u, /[ \t]+/); print u[1]; exit }
        }
      }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    # deb [options] URI SUITE COMPONENTS...
    sed -E 's/\[[^]]*\]//' "$f" | awk -v suite="$SUITE" '$1 == "deb" && $3 == suite { print $2; exit }'
  done
}

MIRROR="$(find_mirror | head -n 1)"
if [[ -z "$MIRROR" ]]; then
  log "no apt source for suite '$SUITE' found in /etc/apt/sources.list(.d)"
  exit 3
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  log "debootstrap is not installed (apt-get install -y debootstrap)"
  exit 3
fi

ROOTFS="$(mktemp -d /tmp/pairlab-base.XXXXXX)"
trap 'rm -rf "$ROOTFS"' EXIT
log "debootstrap --variant=minbase --include=python3 $SUITE from $MIRROR"
start=$(date +%s)
debootstrap --variant=minbase --include=python3 "$SUITE" "$ROOTFS" "$MIRROR" >&2
# Keep the image small and reproducible-ish: no apt lists or caches.
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb
# Labels from the image registry (pairlab images build): "k=v k=v".
LABEL_CHANGES=()
for kv in ${PAIRLAB_IMAGE_LABELS:-}; do LABEL_CHANGES+=(--change "LABEL $kv"); done
tar -C "$ROOTFS" -c . | docker import \
  "${LABEL_CHANGES[@]}" \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' \
  - "$TAG" >&2
log "built $TAG in $(( $(date +%s) - start )) s"
echo "$TAG"
