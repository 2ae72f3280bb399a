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
BARE_PORT=18290 APP_PORT=18291 VAR_PORT=18292
VARIANT_BIN="${VARIANT_BIN:-}"
. "$(dirname "$0")/lib.sh"

need_wrk
build_parts

start bare "$SERVER_CPU" "$WORK/aibench" bare "$BARE_PORT"
start app "$SERVER_CPU" env APP_JWT_SECRET=bench-secret-bench-secret-bench-secret APP_RATELIMIT_LIMIT=1000000000 \
  "$ROOT/bin/app" serve --addr "127.0.0.1:$APP_PORT" --data-dir "$WORK/data"
TARGETS="bare app"
if [ -n "$VARIANT_BIN" ]; then
  start variant "$SERVER_CPU" env APP_JWT_SECRET=bench-secret-bench-secret-bench-secret APP_RATELIMIT_LIMIT=1000000000 \
    "$VARIANT_BIN" serve --addr "127.0.0.1:$VAR_PORT" --data-dir "$WORK/data-variant"
  TARGETS="$TARGETS variant"
fi
for p in $BARE_PORT $APP_PORT ${VARIANT_BIN:+$VAR_PORT}; do wait_port "$p" /api/health || { echo "port $p did not answer" >&2; exit 1; }; done
URL_bare="http://127.0.0.1:$BARE_PORT/api/health"
URL_app="http://127.0.0.1:$APP_PORT/api/health"
URL_variant="http://127.0.0.1:$VAR_PORT/api/health"

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
