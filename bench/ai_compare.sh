#!/usr/bin/env bash
# ai_compare.sh: `app serve` as users run it (the shipped binary, its defaults: embedded store,
# usage recorder, budgets, keys) beside a do-nothing forwarder (httputil.ReverseProxy) and the
# Portkey gateway (@portkey-ai/gateway), all in front of the same fake OpenAI upstream.
#
#   bash bench/ai_compare.sh [seconds per target (5)] [rounds (3)]
#   bash bench/ai_compare.sh --guard      the short check .ci/run runs (see below)
#
# Throughput and latency (p50, p99): wrk at 1 and 32 connections, interleaved rounds (direct,
# forwarder, floor, app, app with a monthly budget, Portkey, …), the fake called directly as
# the base. The floor is the forwarder plus the work an AI proxy that records usage cannot
# skip: the answer's usage decoded and one record per call handed to the same usage recorder
# on an embedded store. Streams: STREAMS (1000) concurrent streamed calls of PIECES (100)
# pieces GAP (20ms) apart, through app (as the caller with a budget) and through the
# forwarder: how many complete, the time to the first piece (p50, p99), the longest gap
# between two pieces (p99), and app's peak RSS.
#
# --guard: 3 rounds of 2 s at 32 connections and 200 streams, no Portkey; exits 1 when app
# with a budget falls under GUARD_RATIO (0.15) of the forwarder's throughput or a stream
# through app fails. Far below the target, so a loaded machine does not trip it, and far
# above a collapse.
#
# BASELINE_BIN=/path/to/another/app adds it as a target ("app-baseline": an earlier build).
# CONNS ("1 32") picks the connection counts; STREAMS=0 skips the streams (a quick look at one
# measure while working on it; the recorded figures come from a full run).
# Needs Go, Node 20 + npm (Portkey, not in --guard) and wrk (installed with apt-get when
# missing). Portkey is installed into PEERS_DIR (default /tmp/aibench-peers), never into the
# repository. The proxies run on CPU SERVER_CPU (0), the fake and the clients on CPU WRK_CPU (1).
# Every process started here is stopped by its PID. Prints Markdown tables on stdout.
set -uo pipefail

GUARD=0
if [ "${1:-}" = "--guard" ]; then GUARD=1; shift; fi
DUR="${1:-5}"
ROUNDS="${2:-3}"
WARM="${WARM:-2}"
STREAMS="${STREAMS:-1000}"
GUARD_RATIO="${GUARD_RATIO:-0.15}"
CONNS="${CONNS:-1 32}"
if [ "$GUARD" = 1 ]; then DUR=2 ROUNDS=3 WARM=1 STREAMS="${GUARD_STREAMS:-200}" CONNS=32; fi
export PIECES="${PIECES:-100}" GAP="${GAP:-20ms}"
PEERS_DIR="${PEERS_DIR:-/tmp/aibench-peers}"
UP_PORT=18190 APP_PORT=18191 PK_PORT=18192 BASE_PORT=18193 FW_PORT=18194 FLOOR_PORT=18195
BASELINE_BIN="${BASELINE_BIN:-}"
. "$(dirname "$0")/lib.sh"

need_wrk
if [ "$GUARD" = 0 ] && [ ! -f "$PEERS_DIR/node_modules/@portkey-ai/gateway/build/start-server.js" ]; then
  echo "installing @portkey-ai/gateway into $PEERS_DIR" >&2
  mkdir -p "$PEERS_DIR"
  npm install --no-audit --no-fund --prefix "$PEERS_DIR" @portkey-ai/gateway >&2 || { echo "npm install failed" >&2; exit 1; }
fi
build_parts

ai_app_env "$UP_PORT"

start fake "$WRK_CPU" "$WORK/aibench" fake "$UP_PORT"
wait_port "$UP_PORT" || { echo "the fake upstream did not start" >&2; exit 1; }
start forwarder "$SERVER_CPU" "$WORK/aibench" forward "$FW_PORT" "http://127.0.0.1:$UP_PORT"
wait_port "$FW_PORT" || { echo "the forwarder did not start" >&2; exit 1; }
start floor "$SERVER_CPU" "$WORK/aibench" floor "$FLOOR_PORT" "http://127.0.0.1:$UP_PORT" "$WORK/floor-data"
wait_port "$FLOOR_PORT" || { echo "the floor did not start: $(tail -3 "$WORK/floor.log")" >&2; exit 1; }
start app "$SERVER_CPU" env "${APP_ENV[@]}" "$ROOT/bin/app" serve --addr "127.0.0.1:$APP_PORT" --data-dir "$WORK/data"
APP_PID=$LAST_PID
wait_port "$APP_PORT" || { echo "app serve did not start: $(tail -3 "$WORK/app.log")" >&2; exit 1; }
TOKEN="$(register "$APP_PORT" bench@example.com)"
BUDGET_TOKEN="$(register "$APP_PORT" budget@example.com)"
[ -n "$TOKEN" ] && [ -n "$BUDGET_TOKEN" ] || { echo "could not register the users on app" >&2; exit 1; }
# The second user holds a monthly budget, set beside the running server as an operator would.
env "${APP_ENV[@]}" "$ROOT/bin/app" users budget budget@example.com 1000000 --data-dir "$WORK/data" >/dev/null ||
  { echo "could not set the budget" >&2; exit 1; }
TARGETS="direct forwarder floor app app-budget"
if [ -n "$BASELINE_BIN" ]; then
  start app-baseline "$SERVER_CPU" env "${APP_ENV[@]}" "$BASELINE_BIN" serve --addr "127.0.0.1:$BASE_PORT" --data-dir "$WORK/data-baseline"
  wait_port "$BASE_PORT" || { echo "the baseline app did not start" >&2; exit 1; }
  BASE_TOKEN="$(register "$BASE_PORT" bench@example.com)"
  TARGETS="$TARGETS app-baseline"
fi
if [ "$GUARD" = 0 ]; then
  start portkey "$SERVER_CPU" node "$PEERS_DIR/node_modules/@portkey-ai/gateway/build/start-server.js" --port="$PK_PORT" --headless
  wait_port "$PK_PORT" || { echo "Portkey did not start: $(tail -3 "$WORK/portkey.log")" >&2; exit 1; }
  TARGETS="$TARGETS portkey"
fi

# ---- the targets, as wrk scripts --------------------------------------------------------------
DIRECT_BODY='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}],"temperature":0.7,"max_completion_tokens":1000}'
wrk_lua "$WORK/direct.lua" "$DIRECT_BODY" 'wrk.headers["Authorization"] = "Bearer sk-bench"'
cp "$WORK/direct.lua" "$WORK/forwarder.lua"
cp "$WORK/direct.lua" "$WORK/floor.lua"
wrk_lua "$WORK/app.lua" "$APP_BODY" "wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
wrk_lua "$WORK/app-budget.lua" "$APP_BODY" "wrk.headers[\"Authorization\"] = \"Bearer $BUDGET_TOKEN\""
wrk_lua "$WORK/portkey.lua" "$DIRECT_BODY" 'wrk.headers["Authorization"] = "Bearer sk-bench"' \
  'wrk.headers["x-portkey-provider"] = "openai"' \
  "wrk.headers[\"x-portkey-custom-host\"] = \"http://127.0.0.1:$UP_PORT/v1\""
[ -n "$BASELINE_BIN" ] && wrk_lua "$WORK/app-baseline.lua" "$APP_BODY" "wrk.headers[\"Authorization\"] = \"Bearer $BASE_TOKEN\""
URL_direct="http://127.0.0.1:$UP_PORT/v1/chat/completions"
URL_forwarder="http://127.0.0.1:$FW_PORT/v1/chat/completions"
URL_floor="http://127.0.0.1:$FLOOR_PORT/v1/chat/completions"
URL_app="http://127.0.0.1:$APP_PORT/api/ai/openai/chat"
URL_app_budget="$URL_app"
URL_app_baseline="http://127.0.0.1:$BASE_PORT/api/ai/openai/chat"
URL_portkey="http://127.0.0.1:$PK_PORT/v1/chat/completions"

# Check every target answers 200 before measuring.
for t in $TARGETS; do
  url="URL_${t//-/_}"
  code="$(taskset -c "$WRK_CPU" wrk -t1 -c1 -d1s -s "$WORK/$t.lua" "${!url}" 2>&1 | grep -c 'Non-2xx')"
  [ "$code" = 0 ] || { echo "$t answers non-2xx: $(tail -3 "$WORK/$t.log" 2>/dev/null)" >&2; exit 1; }
done

to_us() { # wrk latency (e.g. 1.23ms, 850.00us, 1.2s) → microseconds
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; }'
}

echo "$(date -u +%F): wrk -t1, ${WARM}s warm-up + ${DUR}s per target, $ROUNDS interleaved rounds; proxies on CPU $SERVER_CPU, fake and clients on CPU $WRK_CPU" >&2
for c in $CONNS; do
  for t in $TARGETS; do
    url="URL_${t//-/_}"
    taskset -c "$WRK_CPU" wrk -t1 -c"$c" -d"${WARM}s" -s "$WORK/$t.lua" "${!url}" >/dev/null 2>&1
  done
  for r in $(seq 1 "$ROUNDS"); do
    for t in $TARGETS; do
      url="URL_${t//-/_}"
      out="$(taskset -c "$WRK_CPU" wrk -t1 -c"$c" -d"${DUR}s" --latency -s "$WORK/$t.lua" "${!url}")"
      rps="$(echo "$out" | awk '/^Requests\/sec/ { print $2 }')"
      p50="$(to_us "$(echo "$out" | awk '$1 == "50%" { print $2 }')")"
      p99="$(to_us "$(echo "$out" | awk '$1 == "99%" { print $2 }')")"
      non2xx="$(echo "$out" | awk '/Non-2xx/ { print $NF }')"
      [ -n "$non2xx" ] && echo "c$c round $r $t: $non2xx non-2xx answers" >&2
      echo "$rps" >>"$WORK/rps-$c-$t"
      echo "$p50" >>"$WORK/p50-$c-$t"
      echo "$p99" >>"$WORK/p99-$c-$t"
      echo "c$c round $r $t: $rps req/s, p50 $p50 µs, p99 $p99 µs" >&2
    done
  done
done

echo "| connections | target | requests/s (median) | / forwarder | p50 (median) | added p50 over direct | p99 (median) |"
echo "|---|---|---|---|---|---|---|"
for c in $CONNS; do
  base="$(median <"$WORK/p50-$c-direct")"
  fw="$(median <"$WORK/rps-$c-forwarder")"
  for t in $TARGETS; do
    rps="$(median <"$WORK/rps-$c-$t")"
    p50="$(median <"$WORK/p50-$c-$t")"
    p99="$(median <"$WORK/p99-$c-$t")"
    added="—"
    [ "$t" != direct ] && added="$(awk -v a="$p50" -v b="$base" 'BEGIN { printf "+%.0f µs", a - b }')"
    printf '| %s | %s | %.0f | %.2f | %.0f µs | %s | %.0f µs |\n' "$c" "$t" "$rps" "$(awk -v a="$rps" -v b="$fw" 'BEGIN { print a / b }')" "$p50" "$added" "$p99"
  done
done

# ---- concurrent streams ---------------------------------------------------------------------
[ "$STREAMS" = 0 ] && exit 0
DIRECT_STREAM_BODY='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Count slowly."}],"stream":true}'
echo "$STREAMS streams of $PIECES pieces $GAP apart" >&2
fw_streams="$(taskset -c "$WRK_CPU" "$WORK/aibench" streams "$URL_forwarder" "$STREAMS" "$DIRECT_STREAM_BODY" "Bearer sk-bench")"
app_streams="$(taskset -c "$WRK_CPU" "$WORK/aibench" streams "$URL_app" "$STREAMS" "$STREAM_BODY" "Bearer $BUDGET_TOKEN")"
rss_kb="$(awk '/^VmHWM/ { print $2 }' "/proc/$APP_PID/status" 2>/dev/null)"
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
echo
echo "| streams through | completed | first piece p50 | first piece p99 | piece gap p99 | peak RSS |"
echo "|---|---|---|---|---|---|"
printf '| forwarder | %s / %s | %s ms | %s ms | %s ms | — |\n' "$(field "$fw_streams" ok)" "$STREAMS" \
  "$(field "$fw_streams" first_p50_ms)" "$(field "$fw_streams" first_p99_ms)" "$(field "$fw_streams" gap_p99_ms)"
printf '| app (caller with a budget) | %s / %s | %s ms | %s ms | %s ms | %s MB |\n' "$(field "$app_streams" ok)" "$STREAMS" \
  "$(field "$app_streams" first_p50_ms)" "$(field "$app_streams" first_p99_ms)" "$(field "$app_streams" gap_p99_ms)" \
  "$(awk -v k="${rss_kb:-0}" 'BEGIN { printf "%.0f", k / 1024 }')"

if [ "$GUARD" = 1 ]; then
  ratio="$(awk -v a="$(median <"$WORK/rps-32-app-budget")" -v b="$(median <"$WORK/rps-32-forwarder")" 'BEGIN { print a / b }')"
  fail=0
  if awk -v r="$ratio" -v m="$GUARD_RATIO" 'BEGIN { exit !(r < m) }'; then
    echo "guard: app with a budget answers $ratio of the forwarder's throughput at 32 connections, under $GUARD_RATIO" >&2
    fail=1
  fi
  if [ "$(field "$app_streams" ok)" != "$STREAMS" ]; then
    echo "guard: $(field "$app_streams" ok) of $STREAMS streams through app completed" >&2
    fail=1
  fi
  [ "$fail" = 0 ] && echo "guard: ok (app with a budget at $ratio of the forwarder; $STREAMS/$STREAMS streams)" >&2
  exit "$fail"
fi
