#!/usr/bin/env bash
# ai_compare.sh: `app serve`'s AI proxy beside the Portkey gateway (@portkey-ai/gateway), both
# in front of the same fake OpenAI upstream, with wrk at 1 and at 32 connections, interleaved
# (direct, app, Portkey, direct, app, Portkey, …), and the fake called directly as the base.
#
#   bash bench/ai_compare.sh [seconds per target (5)] [rounds (3)]
#
# BASELINE_BIN=/path/to/another/app adds it as a fourth target ("app-baseline": an earlier
# build, say), measured in the same interleaved rounds.
#
# Needs Go, Node 20 + npm, and wrk (installed with apt-get when missing). Portkey is installed
# into PEERS_DIR (default /tmp/aibench-peers), never into the repository. The proxies run on
# CPU SERVER_CPU (0), the fake upstream and wrk on CPU WRK_CPU (1). Every process started here
# is stopped by its PID. Prints a Markdown table on stdout: median requests/s and p50 of each,
# and the p50 each proxy adds over calling the fake directly.
set -uo pipefail

DUR="${1:-5}"
ROUNDS="${2:-3}"
WARM="${WARM:-2}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS_DIR="${PEERS_DIR:-/tmp/aibench-peers}"
WORK="$(mktemp -d)"
SERVER_CPU="${SERVER_CPU:-0}"
WRK_CPU="${WRK_CPU:-1}"
UP_PORT=18190 APP_PORT=18191 PK_PORT=18192 BASE_PORT=18193
BASELINE_BIN="${BASELINE_BIN:-}"
PIDS=()

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
if [ ! -f "$PEERS_DIR/node_modules/@portkey-ai/gateway/build/start-server.js" ]; then
  echo "installing @portkey-ai/gateway into $PEERS_DIR" >&2
  mkdir -p "$PEERS_DIR"
  npm install --no-audit --no-fund --prefix "$PEERS_DIR" @portkey-ai/gateway >&2 || { echo "npm install failed" >&2; exit 1; }
fi
[ -x "$ROOT/bin/app" ] || (cd "$ROOT" && make build >&2) || exit 1

# ---- the fake OpenAI upstream: one fixed chat completion --------------------------------------
mkdir -p "$WORK/fake"
cat >"$WORK/fake/main.go" <<'EOF'
package main

import (
	"io"
	"net/http"
	"os"
)

const answer = `{"id":"chatcmpl-fake123","object":"chat.completion","created":1763800000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default"}`

func main() {
	http.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	})
	_ = http.ListenAndServe("127.0.0.1:"+os.Args[1], nil)
}
EOF
(cd "$WORK/fake" && go mod init fake >/dev/null 2>&1 && go build -o fake . ) || { echo "could not build the fake upstream" >&2; exit 1; }

start() { # name cpu cmd...: starts a process in the background, its PID in LAST_PID
  local name="$1" cpu="$2"; shift 2
  (cd "$WORK" && exec taskset -c "$cpu" "$@") >"$WORK/$name.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}
wait_port() { # port: until something answers HTTP there (20 s)
  local i
  for i in $(seq 1 200); do
    curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
    sleep 0.1
  done
  return 1
}

start fake "$WRK_CPU" "$WORK/fake/fake" "$UP_PORT"
wait_port "$UP_PORT" || { echo "the fake upstream did not start" >&2; exit 1; }

start app "$SERVER_CPU" env APP_AI_OPENAI_BASE_URL="http://127.0.0.1:$UP_PORT/v1" APP_AI_OPENAI_API_KEY=sk-bench \
  APP_JWT_SECRET=bench-secret-bench-secret-bench-secret APP_RATELIMIT_LIMIT=1000000000 \
  "$ROOT/bin/app" serve --addr "127.0.0.1:$APP_PORT" --data-dir "$WORK/data"
wait_port "$APP_PORT" || { echo "app serve did not start: $(tail -3 "$WORK/app.log")" >&2; exit 1; }
register() { # port: a new user's access token
  curl -s "http://127.0.0.1:$1/api/auth/register" -H 'Content-Type: application/json' \
    -d '{"email":"bench@example.com","password":"secret1","name":"Bench"}' | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p'
}
TOKEN="$(register "$APP_PORT")"
[ -n "$TOKEN" ] || { echo "could not register a user on app" >&2; exit 1; }
TARGETS="direct app portkey"
if [ -n "$BASELINE_BIN" ]; then
  start app-baseline "$SERVER_CPU" env APP_AI_OPENAI_BASE_URL="http://127.0.0.1:$UP_PORT/v1" APP_AI_OPENAI_API_KEY=sk-bench \
    APP_JWT_SECRET=bench-secret-bench-secret-bench-secret APP_RATELIMIT_LIMIT=1000000000 \
    "$BASELINE_BIN" serve --addr "127.0.0.1:$BASE_PORT" --data-dir "$WORK/data-baseline"
  wait_port "$BASE_PORT" || { echo "the baseline app did not start" >&2; exit 1; }
  BASE_TOKEN="$(register "$BASE_PORT")"
  TARGETS="direct app app-baseline portkey"
fi

start portkey "$SERVER_CPU" node "$PEERS_DIR/node_modules/@portkey-ai/gateway/build/start-server.js" --port="$PK_PORT" --headless
wait_port "$PK_PORT" || { echo "Portkey did not start: $(tail -3 "$WORK/portkey.log")" >&2; exit 1; }

# ---- the three targets, as wrk scripts ------------------------------------------------------
DIRECT_BODY='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}],"temperature":0.7,"max_completion_tokens":1000}'
APP_BODY='{"messages":[{"role":"user","content":"Say hello in one short sentence."}],"model":"gpt-4o-mini"}'
lua() { # file body header-lines...
  local f="$1" body="$2"; shift 2
  {
    echo 'wrk.method = "POST"'
    printf 'wrk.body = [[%s]]\n' "$body"
    echo 'wrk.headers["Content-Type"] = "application/json"'
    for h in "$@"; do echo "$h"; done
  } >"$f"
}
lua "$WORK/direct.lua" "$DIRECT_BODY" 'wrk.headers["Authorization"] = "Bearer sk-bench"'
lua "$WORK/app.lua" "$APP_BODY" "wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
lua "$WORK/portkey.lua" "$DIRECT_BODY" 'wrk.headers["Authorization"] = "Bearer sk-bench"' \
  'wrk.headers["x-portkey-provider"] = "openai"' \
  "wrk.headers[\"x-portkey-custom-host\"] = \"http://127.0.0.1:$UP_PORT/v1\""
[ -n "$BASELINE_BIN" ] && lua "$WORK/app-baseline.lua" "$APP_BODY" "wrk.headers[\"Authorization\"] = \"Bearer $BASE_TOKEN\""
URL_direct="http://127.0.0.1:$UP_PORT/v1/chat/completions"
URL_app_baseline="http://127.0.0.1:$BASE_PORT/api/ai/openai/chat"
URL_app="http://127.0.0.1:$APP_PORT/api/ai/openai/chat"
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
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "wrk -t1, ${WARM}s warm-up + ${DUR}s per target, $ROUNDS interleaved rounds; proxies on CPU $SERVER_CPU, fake and wrk on CPU $WRK_CPU" >&2
for c in 1 32; do
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
      echo "$rps" >>"$WORK/rps-$c-$t"
      echo "$p50" >>"$WORK/p50-$c-$t"
      echo "c$c round $r $t: $rps req/s, p50 $p50 µs" >&2
    done
  done
done

echo "| connections | target | requests/s (median) | p50 (median) | added p50 over direct |"
echo "|---|---|---|---|---|"
for c in 1 32; do
  base="$(median <"$WORK/p50-$c-direct")"
  for t in $TARGETS; do
    rps="$(median <"$WORK/rps-$c-$t")"
    p50="$(median <"$WORK/p50-$c-$t")"
    added="—"
    [ "$t" != direct ] && added="$(awk -v a="$p50" -v b="$base" 'BEGIN { printf "+%.0f µs", a - b }')"
    printf '| %s | %s | %.0f | %.0f µs | %s |\n' "$c" "$t" "$rps" "$p50" "$added"
  done
done
