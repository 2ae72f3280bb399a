#!/usr/bin/env bash
# health_compare.sh: GET /api/health through `app serve` (the shipped binary, its defaults:
# request id, access log, metrics, rate limit, routing) beside a bare net/http handler writing
# the same JSON, over sockets, wrk at 32 connections in interleaved rounds.
#
#   bash bench/health_compare.sh [seconds per target (5)] [rounds (5)]
#
# VARIANT_BIN=/path/to/another/app adds it as a target (another build of the same code, to
# see what a change to the HTTP layer is worth end to end). Needs Go and wrk (installed with
# apt-get when missing). The servers run on CPU SERVER_CPU (0), wrk on CPU WRK_CPU (1).
set -uo pipefail

DUR="${1:-5}"
ROUNDS="${2:-5}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d)"
SERVER_CPU="${SERVER_CPU:-0}"
WRK_CPU="${WRK_CPU:-1}"
BARE_PORT=18290 APP_PORT=18291 VAR_PORT=18292
VARIANT_BIN="${VARIANT_BIN:-}"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.3
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

command -v wrk >/dev/null || apt-get install -y wrk >&2 || { echo "could not install wrk" >&2; exit 1; }
[ -x "$ROOT/bin/app" ] || (cd "$ROOT" && make build >&2) || exit 1
(cd "$ROOT" && go build -o "$WORK/aibench" ./bench/aibench) || exit 1

start() { # name cmd...
  local name="$1"; shift
  (cd "$WORK" && exec taskset -c "$SERVER_CPU" "$@") >"$WORK/$name.log" 2>&1 &
  PIDS+=("$!")
}
wait_port() { for _ in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$1/api/health" && return 0; sleep 0.1; done; return 1; }

start bare "$WORK/aibench" bare "$BARE_PORT"
start app env APP_JWT_SECRET=bench-secret-bench-secret-bench-secret APP_RATELIMIT_LIMIT=1000000000 \
  "$ROOT/bin/app" serve --addr "127.0.0.1:$APP_PORT" --data-dir "$WORK/data"
TARGETS="bare app"
if [ -n "$VARIANT_BIN" ]; then
  start variant env APP_JWT_SECRET=bench-secret-bench-secret-bench-secret APP_RATELIMIT_LIMIT=1000000000 \
    "$VARIANT_BIN" serve --addr "127.0.0.1:$VAR_PORT" --data-dir "$WORK/data-variant"
  TARGETS="$TARGETS variant"
fi
for p in $BARE_PORT $APP_PORT ${VARIANT_BIN:+$VAR_PORT}; do wait_port "$p" || { echo "port $p did not answer" >&2; exit 1; }; done
URL_bare="http://127.0.0.1:$BARE_PORT/api/health"
URL_app="http://127.0.0.1:$APP_PORT/api/health"
URL_variant="http://127.0.0.1:$VAR_PORT/api/health"
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

for t in $TARGETS; do url="URL_$t"; taskset -c "$WRK_CPU" wrk -t1 -c32 -d1s "${!url}" >/dev/null 2>&1; done
for r in $(seq 1 "$ROUNDS"); do
  for t in $TARGETS; do
    url="URL_$t"
    rps="$(taskset -c "$WRK_CPU" wrk -t1 -c32 -d"${DUR}s" "${!url}" | awk '/^Requests\/sec/ { print $2 }')"
    echo "$rps" >>"$WORK/rps-$t"
    echo "round $r $t: $rps req/s" >&2
  done
done
bare="$(median <"$WORK/rps-bare")"
echo "| target | requests/s (median of $ROUNDS) | / bare |"
echo "|---|---|---|"
for t in $TARGETS; do
  rps="$(median <"$WORK/rps-$t")"
  printf '| %s | %.0f | %.2f |\n' "$t" "$rps" "$(awk -v a="$rps" -v b="$bare" 'BEGIN { print a / b }')"
done
