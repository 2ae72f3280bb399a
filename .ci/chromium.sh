#!/usr/bin/env bash
# Installs Debian's Chromium when it is missing: the console's browser tests (the acceptance
# area `console` and .ci/console-check.sh) drive it. CHROMIUM names the binary (/usr/bin/chromium).
set -euo pipefail
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  echo "installing Debian's chromium" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null
fi
