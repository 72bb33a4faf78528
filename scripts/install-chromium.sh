#!/bin/sh
# Debian's Chromium for the browser tests: Playwright drives it by path and never downloads a browser of its own.
set -eu
CHROMIUM="${AXIOM_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "No Chromium at $CHROMIUM and no apt-get to install it: install Chromium and set AXIOM_CHROMIUM to it." >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# Package lists may be missing or stale on a fresh machine: refresh them only when the first try fails.
$SUDO apt-get install -y chromium || { $SUDO apt-get update && $SUDO apt-get install -y chromium; }
