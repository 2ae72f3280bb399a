#!/usr/bin/env bash
# mock_compare.sh: requests/s and p99 of `app mock serve` beside a bare net/http handler and
# the usual mock servers, with wrk -t1 -c32, server and load generator pinned to one core each.
#
#   bash bench/mock_compare.sh [seconds per target (10)] [memory run seconds (60)]
#
# Needs wrk (apt-get install -y wrk), Go; for the peers Node 20 + npm and Java 17. The peers are
# installed into a temporary folder (PEERS_DIR, default /tmp/mockbench-peers), never the repo.
# A peer that fails to install or start is reported as such and skipped. Every process started
# here is stopped by its PID. Prints a Markdown table (and the memory samples) on stdout.
set -uo pipefail

DUR="${1:-10}"
MEMDUR="${2:-60}"
WARM="${WARM:-3}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS_DIR="${PEERS_DIR:-/tmp/mockbench-peers}"
WORK="$(mktemp -d)"
SERVER_CPU="${SERVER_CPU:-0}"
WRK_CPU="${WRK_CPU:-1}"
BODY='{"id":"42","name":"Ada Lovelace","email":"ada@example.com"}'
PIDS=()

cleanup() {
  local all=()
  for p in "${PIDS[@]}"; do all+=($(descendants "$p") "$p"); done
  PIDS=("${all[@]}")
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }

# ---- fixtures ---------------------------------------------------------------------------------
cat >"$WORK/static.yaml" <<EOF
mocks:
  "GET /api/users/:id":
    data: {id: "42", name: Ada Lovelace, email: ada@example.com}
EOF
cat >"$WORK/templated.yaml" <<'EOF'
mocks:
  "GET /api/users/:id":
    data: {id: "{{.Params.id}}", name: Ada Lovelace, email: ada@example.com}
EOF
mkdir -p "$WORK/bare"
cat >"$WORK/bare/main.go" <<'EOF'
package main

import (
	"net/http"
	"os"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"` + r.PathValue("id") + `","name":"Ada Lovelace","email":"ada@example.com"}`))
	})
	http.ListenAndServe("127.0.0.1:"+os.Args[1], mux)
}
EOF
mkdir -p "$WORK/wm/mappings"
cat >"$WORK/wm/mappings/user.json" <<EOF
{"request":{"method":"GET","urlPathTemplate":"/api/users/{id}"},"response":{"status":200,"headers":{"Content-Type":"application/json"},"body":$(printf '%s' "$BODY" | sed 's/"/\\"/g; s/^/"/; s/$/"/')}}
EOF
cat >"$WORK/mockoon.json" <<EOF
{"uuid":"6f1c2a7e-3b1d-4c55-9a43-1d2e3f4a5b6c","lastMigration":33,"name":"bench","endpointPrefix":"api","port":18086,"hostname":"127.0.0.1",
 "routes":[{"uuid":"7a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d","method":"get","endpoint":"users/:id","type":"http",
  "responses":[{"uuid":"8b3c4d5e-6f7a-4b2c-9d3e-4f5a6b7c8d9e","statusCode":200,"headers":[{"key":"Content-Type","value":"application/json"}],
   "body":$(printf '%s' "$BODY" | sed 's/"/\\"/g; s/^/"/; s/$/"/'),"default":true}]}],
 "rootChildren":[{"type":"route","uuid":"7a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"}]}
EOF
echo '{"users":[{"id":42,"name":"Ada Lovelace","email":"ada@example.com"}]}' >"$WORK/db.json"
echo '{"/api/*":"/$1"}' >"$WORK/routes.json"
cat >"$WORK/mockttp-bench.js" <<EOF
const mockttp = require('mockttp');
(async () => {
  const server = mockttp.getLocal({ recordTraffic: false, cors: false });
  await server.start(18087);
  await server.forGet(/^\/api\/users\/[^/]+$/).thenJson(200, $BODY);
})();
EOF

# ---- build ------------------------------------------------------------------------------------
(cd "$ROOT" && go build -o "$WORK/app" .) || { echo "build failed" >&2; exit 1; }
(cd "$WORK/bare" && GOFLAGS= go build -o "$WORK/bare-server" main.go) || { echo "bare build failed" >&2; exit 1; }

# ---- helpers ----------------------------------------------------------------------------------
ROWS=()
start() { # start NAME PORT CMD...: runs CMD pinned to SERVER_CPU, waits for /api/users/42
  local name="$1" port="$2"; shift 2
  local log="$WORK/$(printf '%s' "$name" | tr -c 'A-Za-z0-9' '_').log"
  (cd "$WORK" && exec taskset -c "$SERVER_CPU" "$@") >"$log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  for _ in $(seq 1 120); do
    if curl -fs -o /dev/null "http://127.0.0.1:$port/api/users/42"; then return 0; fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
    sleep 0.5
  done
  echo "  $name did not start; log tail:" >&2; tail -5 "$log" >&2
  stop; return 1
}
descendants() { local c; for c in $(pgrep -P "$1" 2>/dev/null); do descendants "$c"; echo "$c"; done; }
stop() { # the server and its children (npx/node → java), by PID
  local kids; kids="$(descendants "$SERVER_PID")"
  kill $kids "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
  sleep 0.3; kill -9 $kids 2>/dev/null
}
rss_mb() { # RSS of the server and its children, MB
  local total=0 p
  for p in $SERVER_PID $(pgrep -P "$SERVER_PID" 2>/dev/null) $(for c in $(pgrep -P "$SERVER_PID" 2>/dev/null); do pgrep -P "$c"; done); do
    total=$((total + $(ps -o rss= -p "$p" 2>/dev/null || echo 0)))
  done
  echo $((total / 1024))
}
measure() { # measure LABEL PORT [warm-up seconds]
  local label="$1" port="$2" warm="${3:-$WARM}" out rps p50 p99
  taskset -c "$WRK_CPU" wrk -t1 -c32 -d"${warm}s" "http://127.0.0.1:$port/api/users/42" >/dev/null 2>&1
  out="$(taskset -c "$WRK_CPU" wrk -t1 -c32 -d"${DUR}s" --latency "http://127.0.0.1:$port/api/users/42")"
  rps="$(awk '/Requests\/sec/ {printf "%d", $2}' <<<"$out")"
  p50="$(awk '$1=="50%" {print $2}' <<<"$out")"
  p99="$(awk '$1=="99%" {print $2}' <<<"$out")"
  ROWS+=("| $label | $rps | $p50 | $p99 | $(rss_mb) |")
  echo "  $label: $rps req/s, p50 $p50, p99 $p99" >&2
}
skip() { ROWS+=("| $1 | – | – | – | – | $2 |"); echo "  $1: skipped ($2)" >&2; }
run() { # run LABEL PORT WARM CMD...
  local label="$1" port="$2" warm="$3"; shift 3
  if start "$label" "$port" "$@"; then measure "$label" "$port" "$warm"; stop; else skip "$label" "did not start"; fi
}
peer() { [ -e "$PEERS_DIR/node_modules/$1" ]; }

echo "wrk -t1 -c32, ${WARM}s warm-up + ${DUR}s per target, server on CPU $SERVER_CPU, wrk on CPU $WRK_CPU" >&2
run "net/http bare handler (ceiling)" 18080 "$WARM" "$WORK/bare-server" 18080
run "app mock serve, static route" 18081 "$WARM" "$WORK/app" mock serve --file "$WORK/static.yaml" --port 18081
run "app mock serve, templated route" 18082 "$WARM" "$WORK/app" mock serve --file "$WORK/templated.yaml" --port 18082
if peer wiremock; then
  run "WireMock 3.13.2, journal off" 18083 8 node "$PEERS_DIR/node_modules/.bin/wiremock" --port 18083 --bind-address 127.0.0.1 \
    --root-dir "$WORK/wm" --disable-banner --disable-request-logging --no-request-journal
  run "WireMock 3.13.2, defaults" 18084 8 node "$PEERS_DIR/node_modules/.bin/wiremock" --port 18084 --bind-address 127.0.0.1 \
    --root-dir "$WORK/wm" --disable-banner
else skip "WireMock" "not installed"; fi
if peer mockttp; then run "mockttp 4.6.5" 18087 "$WARM" env NODE_PATH="$PEERS_DIR/node_modules" node "$WORK/mockttp-bench.js"
else skip "mockttp" "not installed"; fi
if peer @mockoon/cli; then run "@mockoon/cli 9.9.0" 18086 "$WARM" node "$PEERS_DIR/node_modules/.bin/mockoon-cli" start \
    --data "$WORK/mockoon.json" --disable-log-to-file --disable-admin-api
else skip "@mockoon/cli" "not installed"; fi
if peer json-server; then run "json-server 0.17.4" 18085 "$WARM" node "$PEERS_DIR/node_modules/.bin/json-server" --port 18085 \
    --host 127.0.0.1 --routes "$WORK/routes.json" --quiet "$WORK/db.json"
else skip "json-server" "not installed"; fi

echo
echo "| Server | req/s | p50 | p99 | RSS MB |"
echo "|---|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"

# ---- memory flatness: our server under load for MEMDUR seconds ---------------------------------
if [ "$MEMDUR" -gt 0 ] && start "mem" 18088 "$WORK/app" mock serve --file "$WORK/templated.yaml" --port 18088; then
  taskset -c "$WRK_CPU" wrk -t1 -c32 -d"${MEMDUR}s" "http://127.0.0.1:18088/api/users/42" >"$WORK/mem-wrk.txt" 2>&1 &
  WRK_PID=$!; PIDS+=("$WRK_PID")
  echo
  echo "Memory of app mock serve (templated route) under wrk -t1 -c32 for ${MEMDUR}s, RSS MB every 10 s:"
  samples="$(rss_mb)"
  for _ in $(seq 10 10 "$MEMDUR"); do sleep 10; samples="$samples $(rss_mb)"; done
  wait "$WRK_PID" 2>/dev/null
  echo "$samples"
  awk '/Requests\/sec/ {print "(" $2 " req/s over the run)"}' "$WORK/mem-wrk.txt"
  stop
fi
