#!/usr/bin/env bash
# mock_compare.sh: requests/s, p50/p99 and CPU per request of `app mock serve` beside a bare
# net/http handler and WireMock, in one run (every server up at once, measured in turn over
# ROUNDS rounds), with wrk -t1 -c32, servers and load generator pinned to one core each. Targets:
#   - the file-served static and templated routes, and the built-in mock (the real API):
#     GET /api/health and a templates list, each ≥ 50 % of the static route;
#   - the same WireMock mappings served by `app mock serve --wiremock` and by WireMock 3.13.2
#     (request journal and request logging off), app ≥ 3×;
#   - a directory of 1,000 WireMock mappings loaded (start to first answer) in under 1 s;
#   - memory flat over a long c32 run, with the response cache on and with recording on;
#   - an OpenAPI description (mock/openapi/testdata/bench.yaml) served by `app mock serve
#     --openapi` and by Stoplight Prism 5.14.2 (`prism mock`): a static answer (GET /items/7, its
#     path parameter checked), app ≥ 5×; and POST /items with a 1 KB JSON body
#     (mock/openapi/testdata/bench-body.json) validated against a schema of 20 properties.
#
#   bash bench/mock_compare.sh [seconds per round (10)] [memory run seconds (600)]
#   ONLY=wiremock bash bench/mock_compare.sh 10 0   # one group: bare, file, builtin, wiremock, openapi
#   ROUNDS=5 bash bench/mock_compare.sh 10 0        # rounds per target (3); each row is the median
#
# Installs what it compares with into PEERS_DIR (default /tmp/mockbench-peers), never the repo:
# the WireMock standalone jar from Maven Central (mvn dependency:copy, else curl), else from the
# npm package wiremock@3.13.2, which ships the same jar; Prism from npm
# (@stoplight/prism-cli@5.14.2: later releases need Node 24) into PRISM_DIR (default /tmp/prism).
# Needs wrk (apt-get install -y wrk), Go, Java 17, Node 20 and npm. A JVM peer is warmed with 5 s runs until its
# throughput stops rising (at least 6 runs, then two in a row under 3 % above the best). Every
# process started here is stopped by its PID. Prints Markdown tables on stdout.
set -uo pipefail

DUR="${1:-10}"
MEMDUR="${2:-600}"
WARM="${WARM:-3}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS_DIR="${PEERS_DIR:-/tmp/mockbench-peers}"
WM_VERSION=3.13.2
PRISM_VERSION=5.14.2
PRISM_DIR="${PRISM_DIR:-/tmp/prism}"
WORK="$(mktemp -d)"
SERVER_CPU="${SERVER_CPU:-0}"
WRK_CPU="${WRK_CPU:-1}"
PIDS=()
HZ="$(getconf CLK_TCK)"

cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }

# ---- peers ------------------------------------------------------------------------------------
WM_JAR="$PEERS_DIR/wiremock-standalone-$WM_VERSION.jar"
install_wiremock() {
  mkdir -p "$PEERS_DIR"
  [ -s "$WM_JAR" ] && return 0
  if command -v mvn >/dev/null && timeout 120 mvn -q -B dependency:copy \
      -Dartifact="org.wiremock:wiremock-standalone:$WM_VERSION" -DoutputDirectory="$PEERS_DIR" >/dev/null 2>&1 && [ -s "$WM_JAR" ]; then
    echo "  WireMock: from Maven Central (mvn)" >&2; return 0
  fi
  if timeout 120 curl -fsSL -o "$WM_JAR" \
      "https://repo1.maven.org/maven2/org/wiremock/wiremock-standalone/$WM_VERSION/wiremock-standalone-$WM_VERSION.jar" 2>/dev/null; then
    echo "  WireMock: from Maven Central (curl)" >&2; return 0
  fi
  rm -f "$WM_JAR"
  echo "  WireMock: Maven Central not reachable; installing the npm package wiremock@$WM_VERSION (it ships the jar)" >&2
  if command -v npm >/dev/null && timeout 300 npm install --no-audit --no-fund --prefix "$PEERS_DIR" "wiremock@$WM_VERSION" >/dev/null 2>&1; then
    cp "$PEERS_DIR/node_modules/wiremock/build/wiremock-standalone-$WM_VERSION.jar" "$WM_JAR" 2>/dev/null && return 0
  fi
  echo "  WireMock: could not be installed" >&2
  return 1
}

PRISM="$PRISM_DIR/node_modules/.bin/prism"
install_prism() {
  [ -x "$PRISM" ] && return 0
  mkdir -p "$PRISM_DIR"
  command -v npm >/dev/null && timeout 300 npm install --no-audit --no-fund --prefix "$PRISM_DIR" \
    "@stoplight/prism-cli@$PRISM_VERSION" >/dev/null 2>&1 && [ -x "$PRISM" ] && return 0
  echo "  Prism: could not be installed" >&2
  return 1
}

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
cat >"$WORK/cached.yaml" <<EOF
config:
  persistence: {enabled: true, storage: indexeddb, dir: $WORK/cache, maxCacheSize: 1000}
mocks:
  "GET /api/users/:id":
    data: {id: "{{.Params.id}}", name: Ada Lovelace, email: ada@example.com}
EOF
# WireMock's documentation examples (stubbing, request matching), with the benchmarked route
# first; the others make the matcher do its usual work.
mkdir -p "$WORK/wm/mappings" "$WORK/wm/__files"
cp "$ROOT/mock/wiremock/testdata/examples/mappings/examples.json" "$WORK/wm/mappings/"
mkdir -p "$WORK/wm1000/mappings"
for i in $(seq 0 999); do
  printf '{"request":{"method":"GET","urlPath":"/m/%d","queryParameters":{"v":{"matches":"[0-9]+"}}},"response":{"status":200,"jsonBody":{"n":%d}}}\n' "$i" "$i" \
    >"$WORK/wm1000/mappings/m$i.json"
done
SPEC="$ROOT/mock/openapi/testdata/bench.yaml"
{
  echo 'wrk.method = "POST"'
  printf 'wrk.body = [[%s]]\n' "$(cat "$ROOT/mock/openapi/testdata/bench-body.json")"
  echo 'wrk.headers["Content-Type"] = "application/json"'
} >"$WORK/post.lua"
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

# ---- build ------------------------------------------------------------------------------------
(cd "$ROOT" && go build -o "$WORK/app" .) || { echo "build failed" >&2; exit 1; }
(cd "$WORK/bare" && GOFLAGS= go build -o "$WORK/bare-server" main.go) || { echo "bare build failed" >&2; exit 1; }

# ---- helpers ----------------------------------------------------------------------------------
SERVER_PID=
start() { # start NAME PORT PROBE CMD...: runs CMD pinned to SERVER_CPU, waits until PROBE answers
  local name="$1" port="$2" probe="$3"; shift 3
  local log="$WORK/$(printf '%s' "$name" | tr -c 'A-Za-z0-9' '_').log"
  (cd "$WORK" && exec taskset -c "$SERVER_CPU" "$@") >"$log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  for _ in $(seq 1 600); do
    if curl -s -o /dev/null "http://127.0.0.1:$port$probe"; then return 0; fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
    sleep 0.05
  done
  echo "  $name did not start; log tail:" >&2; tail -5 "$log" >&2
  stop; return 1
}
stop() { kill "${1:-$SERVER_PID}" 2>/dev/null; wait "${1:-$SERVER_PID}" 2>/dev/null; }
rss_mb() { echo $(( $(ps -o rss= -p "${1:-$SERVER_PID}" 2>/dev/null || echo 0) / 1024 )); }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
wrk_rps() { awk '/Requests\/sec/ {printf "%d", $2}' <<<"$1"; }
warm_jvm() { # warm_jvm URL: 5 s runs until the rate stops rising (at least 6 runs, then two in a
  # row under 3 % above the best so far; at most 24 runs)
  local url="$1" best=0 flat=0 rps i
  for i in $(seq 1 24); do
    rps="$(wrk_rps "$(taskset -c "$WRK_CPU" wrk -t1 -c32 -d5s "$url" 2>/dev/null)")"
    echo "    warm-up run $i: $rps req/s" >&2
    if [ $((rps * 100)) -ge $((best * 103)) ]; then flat=0; else flat=$((flat + 1)); fi
    [ "$rps" -gt "$best" ] && best="$rps"
    if [ "$i" -ge 6 ] && [ "$flat" -ge 2 ]; then break; fi
  done
}

# The table's targets. Every server is started first and stays up (pinned to SERVER_CPU, idle
# until its turn); then ROUNDS rounds measure every target in turn, so a change in the machine's
# load touches every target alike, and each row is the target's median round.
T_LABEL=() T_URL=() T_WARM=() T_HDR=() T_PID=() T_SCRIPT=()
target() { # target LABEL URL WARM(seconds, or jvm) [HEADER] [WRK SCRIPT]: served by the server last started
  T_LABEL+=("$1"); T_URL+=("$2"); T_WARM+=("$3"); T_HDR+=("${4:-}"); T_PID+=("$SERVER_PID"); T_SCRIPT+=("${5:-}")
}
SKIPPED=()
skip() { SKIPPED+=("| $1 | – | – | – | – | – | – |"); echo "  $1: skipped ($2)" >&2; }
serve() { # serve LABEL PORT PATH WARM CMD...: starts a server with one target
  local label="$1" port="$2" path="$3" warm="$4"; shift 4
  if start "$label" "$port" "$path" "$@"; then target "$label" "http://127.0.0.1:$port$path" "$warm"; else skip "$label" "did not start"; fi
}
wrk_args() { # wrk_args I: the header arguments of target I
  WRK_ARGS=()
  if [ -n "${T_HDR[$1]}" ]; then WRK_ARGS=(-H "${T_HDR[$1]}"); fi
  if [ -n "${T_SCRIPT[$1]}" ]; then WRK_ARGS+=(-s "${T_SCRIPT[$1]}"); fi
}
measure_once() { # measure_once I: one DUR-second run of target I, as "rps p50 p99 cpu_us"
  local i="$1" t0 t1 out reqs
  wrk_args "$i"
  t0="$(cpu_ticks "${T_PID[$i]}")"
  out="$(taskset -c "$WRK_CPU" wrk -t1 -c32 -d"${DUR}s" --latency "${WRK_ARGS[@]}" "${T_URL[$i]}")"
  t1="$(cpu_ticks "${T_PID[$i]}")"
  reqs="$(awk '/requests in/ {print $1}' <<<"$out")"
  printf '%s %s %s %s\n' "$(wrk_rps "$out")" "$(awk '$1=="50%" {print $2}' <<<"$out")" "$(awk '$1=="99%" {print $2}' <<<"$out")" \
    "$(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="${reqs:-0}" 'BEGIN { if (n > 0) printf "%.1f", d / hz * 1e6 / n; else print "–" }')"
}

want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }

ROUNDS="${ROUNDS:-3}"
echo "wrk -t1 -c32, ${WARM}s warm-up (JVM: until the rate stops rising), then $ROUNDS rounds of ${DUR}s per target; servers on CPU $SERVER_CPU, wrk on CPU $WRK_CPU" >&2
if want bare; then
  serve "net/http bare handler (ceiling)" 18080 /api/users/42 "$WARM" "$WORK/bare-server" 18080
fi
if want file; then
  serve "app mock serve, static route" 18081 /api/users/42 "$WARM" "$WORK/app" mock serve --file "$WORK/static.yaml" --port 18081
  serve "app mock serve, templated route" 18082 /api/users/42 "$WARM" "$WORK/app" mock serve --file "$WORK/templated.yaml" --port 18082
fi

# The built-in mock: the real handlers over a throwaway store.
BUILTIN_NOTE=
if ! want builtin; then :
elif t0=$(date +%s%N) && start "builtin" 18089 /api/health "$WORK/app" mock serve --port 18089; then
  t1=$(date +%s%N); sleep 2
  BUILTIN_NOTE="Built-in mock: start to the first /api/health answer $(( (t1 - t0) / 1000000 )) ms (polled every 50 ms), idle RSS $(rss_mb) MB"
  TOKEN="$(curl -s -XPOST http://127.0.0.1:18089/api/auth/login -H 'Content-Type: application/json' \
    -d '{"email":"user@example.com","password":"user123"}' | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
  target "app mock serve (built-in), GET /api/health" "http://127.0.0.1:18089/api/health" "$WARM"
  target "app mock serve (built-in), templates list" \
    "http://127.0.0.1:18089/api/spaces/65f000000000000000000001/properties/templates" "$WARM" "Authorization: Bearer $TOKEN"
else skip "app mock serve (built-in)" "did not start"; fi

if want wiremock; then
  serve "app mock serve --wiremock (WireMock's examples)" 18090 /api/users/42 "$WARM" "$WORK/app" mock serve --wiremock "$WORK/wm" --port 18090
  if install_wiremock; then
    serve "WireMock $WM_VERSION, journal and request logging off" 18083 /api/users/42 jvm java -jar "$WM_JAR" --port 18083 \
      --bind-address 127.0.0.1 --root-dir "$WORK/wm" --disable-banner --disable-request-logging --no-request-journal
  else skip "WireMock $WM_VERSION" "not installed"; fi
fi

if want openapi; then
  # Both serve the same description and answer the same requests: the example for the GET, 201
  # for the POST once its body is validated (a non-2xx answer would show in wrk's output).
  serve "app mock serve --openapi, static answer" 18095 /items/7 "$WARM" "$WORK/app" mock serve --openapi "$SPEC" --port 18095
  [ "${T_URL[-1]:-}" = http://127.0.0.1:18095/items/7 ] &&
    target "app mock serve --openapi, POST 1 KB body validated" http://127.0.0.1:18095/items "$WARM" "" "$WORK/post.lua"
  if install_prism; then
    serve "Prism $PRISM_VERSION, static answer" 18096 /items/7 "$WARM" "$PRISM" mock --host 127.0.0.1 --port 18096 "$SPEC"
    [ "${T_URL[-1]:-}" = http://127.0.0.1:18096/items/7 ] &&
      target "Prism $PRISM_VERSION, POST 1 KB body validated" http://127.0.0.1:18096/items "$WARM" "" "$WORK/post.lua"
  else skip "Prism $PRISM_VERSION" "not installed"; fi
fi

for i in "${!T_LABEL[@]}"; do
  echo "  warming: ${T_LABEL[$i]}" >&2
  if [ "${T_WARM[$i]}" = jvm ]; then warm_jvm "${T_URL[$i]}"
  else wrk_args "$i"; taskset -c "$WRK_CPU" wrk -t1 -c32 -d"${T_WARM[$i]}s" "${WRK_ARGS[@]}" "${T_URL[$i]}" >/dev/null 2>&1; fi
done
RESULTS=()
for r in $(seq 1 "$ROUNDS"); do
  for i in "${!T_LABEL[@]}"; do
    line="$(measure_once "$i")"
    RESULTS[$i]="${RESULTS[$i]:-}$line"$'\n'
    echo "  round $r, ${T_LABEL[$i]}: $line (req/s p50 p99 CPU-µs/request)" >&2
  done
done

echo
[ -n "$BUILTIN_NOTE" ] && echo "$BUILTIN_NOTE" && echo
echo "Each row: the median of $ROUNDS rounds of ${DUR} s by req/s (its p50 and p99), the median CPU per request, every round's req/s."
echo
echo "| Server | req/s | p50 | p99 | CPU µs/request | RSS MB | rounds (req/s) |"
echo "|---|---:|---:|---:|---:|---:|---|"
for i in "${!T_LABEL[@]}"; do
  mid="$(printf '%s' "${RESULTS[$i]}" | sort -n -k1,1 | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)')"
  cpu="$(printf '%s' "${RESULTS[$i]}" | awk '{print $4}' | sort -n | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)')"
  all="$(printf '%s' "${RESULTS[$i]}" | awk '{printf "%s%s", sep, $1; sep = ", "}')"
  read -r rps p50 p99 _ <<<"$mid"
  echo "| ${T_LABEL[$i]} | $rps | $p50 | $p99 | $cpu | $(rss_mb "${T_PID[$i]}") | $all |"
done
[ "${#SKIPPED[@]}" -gt 0 ] && printf '%s\n' "${SKIPPED[@]}"
for p in "${T_PID[@]}"; do stop "$p"; done

# ---- 1,000 WireMock mappings: start to first answer --------------------------------------------
t0=$(date +%s%N)
if want wiremock && start "wm1000" 18091 "/m/999?v=1" "$WORK/app" mock serve --wiremock "$WORK/wm1000" --port 18091; then
  t1=$(date +%s%N)
  echo
  echo "1,000 WireMock mappings: start to first answer $(( (t1 - t0) / 1000000 )) ms; $(curl -s 'http://127.0.0.1:18091/m/999?v=1')"
  stop
fi

# ---- memory flatness ------------------------------------------------------------------------------
memrun() { # memrun LABEL PORT IDS CMD...: IDS distinct URLs in turn (0: a new one per request)
  local label="$1" port="$2" ids="$3"; shift 3
  start "$label" "$port" /api/users/1 "$@" || return
  cat >"$WORK/ids.lua" <<EOF
counter = 0
request = function()
  counter = counter + 1
  local id = counter
  if $ids > 0 then id = counter % $ids end
  return wrk.format("GET", "/api/users/" .. id)
end
EOF
  taskset -c "$WRK_CPU" wrk -t1 -c32 -d"${MEMDUR}s" -s "$WORK/ids.lua" "http://127.0.0.1:$port/" >"$WORK/mem-wrk.txt" 2>&1 &
  local wpid=$!; PIDS+=("$wpid")
  local step=$(( MEMDUR / 6 )); [ "$step" -lt 5 ] && step=5
  local samples; samples="$(rss_mb)"
  for _ in $(seq "$step" "$step" "$MEMDUR"); do sleep "$step"; samples="$samples $(rss_mb)"; done
  wait "$wpid" 2>/dev/null
  echo "$label, RSS MB every ${step} s: $samples $(awk '/Requests\/sec/ {print "(" $2 " req/s)"}' "$WORK/mem-wrk.txt")"
  stop
}
if [ "$MEMDUR" -gt 0 ]; then
  echo
  echo "Memory under wrk -t1 -c32 for ${MEMDUR}s:"
  # The cache sees a new URL on every request (it must evict, not grow); the recorder sees 50
  # routes again and again (a recording keeps one answer per route).
  memrun "cache on (bbolt, 1,000 entries), a new URL per request" 18092 0 "$WORK/app" mock serve --file "$WORK/cached.yaml" --port 18092
  start "upstream" 18093 /api/users/1 "$WORK/bare-server" 18093 && UP_PID="$SERVER_PID"
  memrun "recording on (--target --record), 50 URLs" 18094 50 "$WORK/app" mock serve --target http://127.0.0.1:18093 --record "$WORK/rec.yaml" --port 18094
  [ -n "${UP_PID:-}" ] && kill "$UP_PID" 2>/dev/null
fi
