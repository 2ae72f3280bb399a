#!/usr/bin/env bash
# pgo_profile.sh: writes default.pgo, the CPU profile `go build` uses for profile-guided
# optimization of the shipped binary (Go picks up default.pgo beside main.go by itself).
#
#   bash bench/pgo_profile.sh [seconds (40)]
#
# The profile comes from the program users run under the workload bench/ai_compare.sh
# measures: `app serve` with its defaults (embedded store, usage recorder, budgets, keys) in
# front of the fake OpenAI upstream of bench/aibench, AI calls at 1 and 32 connections from a
# caller with a monthly budget and one without, then 1,000 concurrent streams. The binary is
# built for this run only with net/http/pprof on 127.0.0.1:PPROF_PORT (16060), through a build
# overlay of main.go: the shipped binary serves no profiling endpoint. Regenerate it when the
# hot path changes much; a stale profile still builds, it only optimizes less.
set -uo pipefail
SECS="${1:-40}"
PPROF_PORT="${PPROF_PORT:-16060}"
UP_PORT=18290 APP_PORT=18291
. "$(dirname "$0")/lib.sh"
need_wrk

cat >"$WORK/main.go" <<GO
package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"

	"github.com/acme/app/cmd"
)

func main() {
	go http.ListenAndServe("127.0.0.1:$PPROF_PORT", nil)
	os.Exit(cmd.Execute())
}
GO
printf '{"Replace":{"%s":"%s"}}\n' "$ROOT/main.go" "$WORK/main.go" >"$WORK/overlay.json"
(cd "$ROOT" && go build -pgo=off -overlay "$WORK/overlay.json" -o "$WORK/app" . &&
  go build -o "$WORK/aibench" ./bench/aibench) || { echo "could not build" >&2; exit 1; }

ai_app_env "$UP_PORT"
start fake "$WRK_CPU" "$WORK/aibench" fake "$UP_PORT"
wait_port "$UP_PORT" || { echo "the fake upstream did not start" >&2; exit 1; }
start app "$SERVER_CPU" env "${APP_ENV[@]}" "$WORK/app" serve --addr "127.0.0.1:$APP_PORT" --data-dir "$WORK/data"
wait_port "$APP_PORT" || { echo "app serve did not start: $(tail -3 "$WORK/app.log")" >&2; exit 1; }
wait_port "$PPROF_PORT" /debug/pprof/ || { echo "the profiling endpoint did not start" >&2; exit 1; }
TOKEN="$(register "$APP_PORT" bench@example.com)"
BUDGET_TOKEN="$(register "$APP_PORT" budget@example.com)"
[ -n "$TOKEN" ] && [ -n "$BUDGET_TOKEN" ] || { echo "could not register the users" >&2; exit 1; }
env "${APP_ENV[@]}" "$WORK/app" users budget budget@example.com 1000000 --data-dir "$WORK/data" >/dev/null ||
  { echo "could not set the budget" >&2; exit 1; }
wrk_lua "$WORK/plain.lua" "$APP_BODY" "wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
wrk_lua "$WORK/budget.lua" "$APP_BODY" "wrk.headers[\"Authorization\"] = \"Bearer $BUDGET_TOKEN\""
URL="http://127.0.0.1:$APP_PORT/api/ai/openai/chat"
taskset -c "$WRK_CPU" wrk -t1 -c4 -d2s -s "$WORK/budget.lua" "$URL" >/dev/null

end=$((SECONDS + SECS))
curl -s -o "$WORK/cpu.pprof" "http://127.0.0.1:$PPROF_PORT/debug/pprof/profile?seconds=$SECS" &
PROFILE_PID=$!
share() { awk -v s="$SECS" -v p="$1" 'BEGIN { printf "%ds", s * p / 100 }'; } # p % of SECS
taskset -c "$WRK_CPU" wrk -t1 -c1 -d"$(share 20)" -s "$WORK/budget.lua" "$URL" >/dev/null
taskset -c "$WRK_CPU" wrk -t1 -c1 -d"$(share 10)" -s "$WORK/plain.lua" "$URL" >/dev/null
taskset -c "$WRK_CPU" wrk -t1 -c32 -d"$(share 25)" -s "$WORK/budget.lua" "$URL" >/dev/null
taskset -c "$WRK_CPU" wrk -t1 -c32 -d"$(share 12)" -s "$WORK/plain.lua" "$URL" >/dev/null
while [ "$SECONDS" -lt "$end" ]; do
  taskset -c "$WRK_CPU" "$WORK/aibench" streams "$URL" 1000 "$STREAM_BODY" "Bearer $BUDGET_TOKEN" >/dev/null
done
wait "$PROFILE_PID"
[ -s "$WORK/cpu.pprof" ] || { echo "no profile was written" >&2; exit 1; }
cp "$WORK/cpu.pprof" "$ROOT/default.pgo"
echo "wrote $ROOT/default.pgo ($(wc -c <"$ROOT/default.pgo") bytes)" >&2
