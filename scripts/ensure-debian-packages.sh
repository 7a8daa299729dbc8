#!/usr/bin/env bash
# Install the Debian packages named as arguments, but only those that are missing.
# Non-interactive; uses sudo when not root. On a machine without apt-get it only says what
# is missing (with STRICT=1 it fails instead).
#   scripts/ensure-debian-packages.sh ffmpeg sox libsox-fmt-all espeak-ng chromium
set -euo pipefail

missing=()
for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "system packages: all present ($*)"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "system packages missing and no apt-get here: ${missing[*]} - install them by hand" >&2
    [ "${STRICT:-0}" = 1 ] && exit 1 || exit 0
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo=(sudo)
    else
        echo "system packages missing: ${missing[*]}; run as root: apt-get install ${missing[*]}" >&2
        [ "${STRICT:-0}" = 1 ] && exit 1 || exit 0
    fi
fi

echo "system packages: installing ${missing[*]}"
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "system packages: installed in $(( $(date +%s) - start )) s"
