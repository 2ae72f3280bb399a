#!/usr/bin/env bash
# tools_cpu.sh: the CPU `app serve` (the shipped binary, its defaults: embedded store, usage
# recorder, budgets, keys) spends on a tool-call answer through /v1/chat/completions beside a
# plain answer of the same size, in front of bench/aibench's fake OpenAI upstream.
#
#   bash bench/tools_cpu.sh [seconds per run (5)] [rounds (5)]
#
# Both requests carry the same tools; "tool_choice":"required" gets a tool call, "none" a text
# answer of the same bytes (the fake's toolAnswer and plainTwin). Streamed, the call comes as
# PIECES argument fragments, the text as PIECES text pieces, GAP apart. The CPU is app's
# (utime + stime from /proc) over each run, divided by the calls it answered; runs of the two
# kinds are interleaved, and the ratio of the medians is printed. Beside it, the same for a
# do-nothing forwarder (httputil.ReverseProxy) passing the same answers on: the part of the
# ratio that is the wire format's own (a tool-call piece is a larger JSON event than a text
# piece of the same content). app and the forwarder run on CPU SERVER_CPU (0), the fake and
# the clients on WRK_CPU (1). Needs Go and wrk (installed with apt-get when missing).
set -uo pipefail

DUR="${1:-5}"
ROUNDS="${2:-5}"
export PIECES="${PIECES:-20}" GAP="${GAP:-1ms}"
STREAMS="${STREAMS:-200}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d)"
SERVER_CPU="${SERVER_CPU:-0}"
WRK_CPU="${WRK_CPU:-1}"
UP_PORT=18290 APP_PORT=18291 FW_PORT=18292
PIDS=()
ulimit -n 65536 2>/dev/null || true

descendants() { local c; for c in $(pgrep -P "$1" 2>/dev/null); do descendants "$c"; echo "$c"; done; }
cleanup() {
  local all=() p
  for p in "${PIDS[@]}"; do all+=($(descendants "$p") "$p"); done
  for p in "${all[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${all[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

if ! command -v wrk >/dev/null; then
  echo "wrk not found: installing it with apt-get" >&2
  apt-get install -y wrk >&2 || { echo "could not install wrk" >&2; exit 1; }
fi
[ -x "$ROOT/bin/app" ] || (cd "$ROOT" && make build >&2) || exit 1
(cd "$ROOT" && go build -o "$WORK/aibench" ./bench/aibench) || { echo "could not build bench/aibench" >&2; exit 1; }

start() { # name cpu cmd...: starts a process in the background, its PID in LAST_PID
  local name="$1" cpu="$2"; shift 2
  (cd "$WORK" && exec taskset -c "$cpu" "$@") >"$WORK/$name.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}
wait_port() {
  local i
  for i in $(seq 1 200); do
    curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
    sleep 0.1
  done
  return 1
}
start fake "$WRK_CPU" "$WORK/aibench" fake "$UP_PORT"
wait_port "$UP_PORT" || { echo "the fake upstream did not start" >&2; exit 1; }
start forwarder "$SERVER_CPU" "$WORK/aibench" forward "$FW_PORT" "http://127.0.0.1:$UP_PORT"
FW_PID=$LAST_PID
wait_port "$FW_PORT" || { echo "the forwarder did not start" >&2; exit 1; }
start app "$SERVER_CPU" env APP_AI_OPENAI_BASE_URL="http://127.0.0.1:$UP_PORT/v1" APP_AI_OPENAI_API_KEY=sk-bench \
  APP_JWT_SECRET=bench-secret-bench-secret-bench-secret APP_RATELIMIT_LIMIT=1000000000 \
  "$ROOT/bin/app" serve --addr "127.0.0.1:$APP_PORT" --data-dir "$WORK/data"
APP_PID=$LAST_PID
wait_port "$APP_PORT" || { echo "app serve did not start: $(tail -3 "$WORK/app.log")" >&2; exit 1; }
TOKEN="$(curl -s "http://127.0.0.1:$APP_PORT/api/auth/register" -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.com","password":"secret1","name":"Bench"}' | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
KEY="$(curl -s "http://127.0.0.1:$APP_PORT/api/keys" -H 'Content-Type: application/json' -H "Authorization: Bearer $TOKEN" \
  -d '{"name":"bench"}' | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')"
[ -n "$KEY" ] || { echo "could not create a key" >&2; exit 1; }

TOOLS='"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}]'
body() { # choice [stream] [model]
  echo "{\"model\":\"${3:-openai/gpt-4o-mini}\",\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}],$TOOLS,\"tool_choice\":\"$1\"${2:+,\"stream\":true}}"
}
for kind in plain tool; do
  choice=none; [ "$kind" = tool ] && choice=required
  {
    echo 'wrk.method = "POST"'
    printf 'wrk.body = [[%s]]\n' "$(body $choice)"
    echo 'wrk.headers["Content-Type"] = "application/json"'
    echo "wrk.headers[\"Authorization\"] = \"Bearer $KEY\""
  } >"$WORK/$kind.lua"
  {
    echo 'wrk.method = "POST"'
    printf 'wrk.body = [[%s]]\n' "$(body $choice "" gpt-4o-mini)"
    echo 'wrk.headers["Content-Type"] = "application/json"'
    echo 'wrk.headers["Authorization"] = "Bearer sk-bench"'
  } >"$WORK/fw-$kind.lua"
  out="$(curl -s "http://127.0.0.1:$APP_PORT/v1/chat/completions" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d "$(body $choice)")"
  case "$kind:$out" in
    plain:*'"finish_reason":"stop"'* | tool:*'"finish_reason":"tool_calls"'*) ;;
    *) echo "$kind: unexpected answer $out" >&2; exit 1 ;;
  esac
done

cpu() { awk '{ print $14 + $15 }' "/proc/${1:-$APP_PID}/stat"; } # clock ticks
TICK_US=$((1000000 / $(getconf CLK_TCK)))
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "$(date -u +%F): $ROUNDS interleaved rounds of ${DUR}s (wrk -c8) and $STREAMS streams of $PIECES pieces $GAP apart per kind" >&2
for kind in plain tool; do taskset -c "$WRK_CPU" wrk -t1 -c8 -d2s -s "$WORK/$kind.lua" "http://127.0.0.1:$APP_PORT/v1/chat/completions" >/dev/null; done
for r in $(seq 1 "$ROUNDS"); do
  for kind in plain tool; do
    c0="$(cpu)"
    out="$(taskset -c "$WRK_CPU" wrk -t1 -c8 -d"${DUR}s" -s "$WORK/$kind.lua" "http://127.0.0.1:$APP_PORT/v1/chat/completions")"
    c1="$(cpu)"
    n="$(echo "$out" | awk '/requests in/ { print $1 }')"
    echo "$out" | grep -q Non-2xx && { echo "$kind: non-2xx answers" >&2; exit 1; }
    us="$(awk -v c=$((c1 - c0)) -v t="$TICK_US" -v n="$n" 'BEGIN { printf "%.1f", c * t / n }')"
    echo "$us" >>"$WORK/cpu-$kind"
    echo "round $r $kind: $n calls, $us µs CPU per call" >&2

    choice=none; [ "$kind" = tool ] && choice=required
    c0="$(cpu)"
    line="$(taskset -c "$WRK_CPU" "$WORK/aibench" streams "http://127.0.0.1:$APP_PORT/v1/chat/completions" "$STREAMS" "$(body $choice 1)" "Bearer $KEY")"
    c1="$(cpu)"
    us="$(awk -v c=$((c1 - c0)) -v t="$TICK_US" -v n="$STREAMS" 'BEGIN { printf "%.1f", c * t / n }')"
    echo "$us" >>"$WORK/cpu-stream-$kind"
    echo "round $r $kind streamed: $us µs CPU per stream ($line)" >&2

    c0="$(cpu "$FW_PID")"
    out="$(taskset -c "$WRK_CPU" wrk -t1 -c8 -d"${DUR}s" -s "$WORK/fw-$kind.lua" "http://127.0.0.1:$FW_PORT/v1/chat/completions")"
    c1="$(cpu "$FW_PID")"
    n="$(echo "$out" | awk '/requests in/ { print $1 }')"
    us="$(awk -v c=$((c1 - c0)) -v t="$TICK_US" -v n="$n" 'BEGIN { printf "%.1f", c * t / n }')"
    echo "$us" >>"$WORK/cpu-fw-$kind"
    c0="$(cpu "$FW_PID")"
    taskset -c "$WRK_CPU" "$WORK/aibench" streams "http://127.0.0.1:$FW_PORT/v1/chat/completions" "$STREAMS" "$(body $choice 1 gpt-4o-mini)" "Bearer sk-bench" >/dev/null
    c1="$(cpu "$FW_PID")"
    us="$(awk -v c=$((c1 - c0)) -v t="$TICK_US" -v n="$STREAMS" 'BEGIN { printf "%.1f", c * t / n }')"
    echo "$us" >>"$WORK/cpu-fw-stream-$kind"
    echo "round $r $kind through the forwarder: $(tail -1 "$WORK/cpu-fw-$kind") µs per call, $us µs per stream" >&2
  done
done
echo "| answer | through | plain: µs CPU per call (median) | tool call: µs CPU per call (median) | tool / plain |"
echo "|---|---|---|---|---|"
for what in "" stream-; do
  for via in app fw; do
    prefix="$what"; [ "$via" = fw ] && prefix="fw-$what"
    p="$(median <"$WORK/cpu-${prefix}plain")"
    t="$(median <"$WORK/cpu-${prefix}tool")"
    label="whole"; [ -n "$what" ] && label="streamed, $PIECES pieces"
    name="app"; [ "$via" = fw ] && name="forwarder"
    printf '| %s | %s | %s | %s | %.3f |\n' "$label" "$name" "$p" "$t" "$(awk -v a="$t" -v b="$p" 'BEGIN { print a / b }')"
  done
done
