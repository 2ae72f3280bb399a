#!/usr/bin/env bash
# Measures `app serve` with the embedded store: time from start to the first 200 from
# /api/health on a fresh data directory and on a restart, and resident memory when idle.
# Targets (issue 2): ready within 3 s; idle RSS under 150 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-bin/app}
[ -x "$bin" ] || make build >/dev/null
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
trap '[ -n "$pid" ] && kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT

pid=
ready_ms() { # sets pid and ms
  local start end
  start=$(date +%s%N)
  APP_LOG_LEVEL=warn "$bin" serve --addr "127.0.0.1:$port" --data-dir "$dir" >/dev/null 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$port/api/health" >/dev/null; do
    kill -0 $pid 2>/dev/null || { echo "serve exited" >&2; exit 1; }
    sleep 0.01
  done
  end=$(date +%s%N)
  ms=$(( (end - start) / 1000000 ))
}

ready_ms; cold=$ms
kill -TERM $pid; wait $pid || true
ready_ms; warm=$ms
sleep 2
rss_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
echo "serve ready (fresh data dir): ${cold} ms"
echo "serve ready (restart):        ${warm} ms"
echo "idle RSS:                     $(( rss_kb / 1024 )) MB"
