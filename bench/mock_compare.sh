#!/usr/bin/env bash
# mock_compare.sh: `app mock serve --openapi` beside Stoplight Prism (`prism mock`) on the same
# description and the same requests.
#
#   bash bench/mock_compare.sh [seconds per target (5)] [rounds (3)]
#
# The description is mock/openapi/testdata/bench.yaml. Two request kinds, each sent to both
# servers with wrk at 1 and 32 connections, in interleaved rounds:
#   static  GET /items/7: a static answer (the media type's example), the path parameter checked;
#   post    POST /items with a 1 KB JSON body (mock/openapi/testdata/bench-body.json) validated
#           against a schema of 20 properties, answered 201.
# Every answer must be 2xx (a non-2xx count is reported). The table gives the median requests/s
# and p50 of the rounds, app's ratio to Prism, and (at 1 connection) what body validation adds
# to app's p50 over the static GET.
#
# Needs Go, Node 20 + npm and wrk (installed with apt-get when missing). Prism
# (@stoplight/prism-cli@5.14.2; later releases need Node 24) is installed into PEERS_DIR
# (default /tmp/prism), never into the repository. The servers run on CPU SERVER_CPU (0), wrk
# on CPU WRK_CPU (1). Every process started here is stopped by its PID. Markdown on stdout.
set -uo pipefail

DUR="${1:-5}"
ROUNDS="${2:-3}"
WARM="${WARM:-2}"
CONNS="${CONNS:-1 32}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS_DIR="${PEERS_DIR:-/tmp/prism}"
PRISM_VERSION="5.14.2"
SPEC="$ROOT/mock/openapi/testdata/bench.yaml"
BODY="$ROOT/mock/openapi/testdata/bench-body.json"
WORK="$(mktemp -d)"
SERVER_CPU="${SERVER_CPU:-0}"
WRK_CPU="${WRK_CPU:-1}"
APP_PORT="${APP_PORT:-18290}" PRISM_PORT="${PRISM_PORT:-18291}"
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
PRISM="$PEERS_DIR/node_modules/.bin/prism"
if [ ! -x "$PRISM" ]; then
  echo "installing @stoplight/prism-cli@$PRISM_VERSION into $PEERS_DIR" >&2
  mkdir -p "$PEERS_DIR"
  npm install --no-audit --no-fund --prefix "$PEERS_DIR" "@stoplight/prism-cli@$PRISM_VERSION" >&2 || { echo "npm install failed" >&2; exit 1; }
fi
[ -x "$ROOT/bin/app" ] || (cd "$ROOT" && make build >&2) || exit 1

start() { # name cpu cmd...: starts a process in the background
  local name="$1" cpu="$2"; shift 2
  (cd "$WORK" && exec taskset -c "$cpu" "$@") >"$WORK/$name.log" 2>&1 &
  PIDS+=("$!")
}
wait_ok() { # url: until it answers 2xx (30 s)
  local i
  for i in $(seq 1 300); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$1 did not come up" >&2
  return 1
}

start app "$SERVER_CPU" "$ROOT/bin/app" mock serve --port "$APP_PORT" --openapi "$SPEC"
start prism "$SERVER_CPU" "$PRISM" mock --port "$PRISM_PORT" --host 127.0.0.1 "$SPEC"
wait_ok "http://127.0.0.1:$APP_PORT/items/7" || { cat "$WORK/app.log" >&2; exit 1; }
wait_ok "http://127.0.0.1:$PRISM_PORT/items/7" || { cat "$WORK/prism.log" >&2; exit 1; }

printf 'wrk.method = "GET"\n' >"$WORK/static.lua"
{
  echo 'wrk.method = "POST"'
  printf 'wrk.body = [[%s]]\n' "$(cat "$BODY")"
  echo 'wrk.headers["Content-Type"] = "application/json"'
} >"$WORK/post.lua"
for kind in static post; do
  path=/items/7
  [ "$kind" = post ] && path=/items
  for srv in app prism; do
    port=APP_PORT
    [ "$srv" = prism ] && port=PRISM_PORT
    echo "http://127.0.0.1:${!port}$path" >"$WORK/url-$srv-$kind"
    code="$(curl -s -o /dev/null -w '%{http_code}' -X "$([ "$kind" = post ] && echo POST || echo GET)" \
      -H 'Content-Type: application/json' $([ "$kind" = post ] && echo --data-binary "@$BODY") "$(cat "$WORK/url-$srv-$kind")")"
    case "$code" in 2??) ;; *) echo "$srv $kind answered $code, not 2xx" >&2; exit 1 ;; esac
  done
done

to_us() { # wrk latency (e.g. 1.23ms, 850.00us, 1.2s) → microseconds
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; }'
}
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "$(date -u +%F): wrk -t1, ${WARM}s warm-up + ${DUR}s per target, $ROUNDS interleaved rounds; servers on CPU $SERVER_CPU, wrk on CPU $WRK_CPU" >&2
for c in $CONNS; do
  for kind in static post; do
    for srv in app prism; do
      taskset -c "$WRK_CPU" wrk -t1 -c"$c" -d"${WARM}s" -s "$WORK/$kind.lua" "$(cat "$WORK/url-$srv-$kind")" >/dev/null 2>&1
    done
  done
  for r in $(seq 1 "$ROUNDS"); do
    for kind in static post; do
      for srv in app prism; do
        out="$(taskset -c "$WRK_CPU" wrk -t1 -c"$c" -d"${DUR}s" --latency -s "$WORK/$kind.lua" "$(cat "$WORK/url-$srv-$kind")")"
        rps="$(echo "$out" | awk '/^Requests\/sec/ { print $2 }')"
        p50="$(to_us "$(echo "$out" | awk '$1 == "50%" { print $2 }')")"
        non2xx="$(echo "$out" | awk '/Non-2xx/ { print $NF }')"
        [ -n "$non2xx" ] && echo "c$c round $r $srv $kind: $non2xx non-2xx answers" >&2
        echo "$rps" >>"$WORK/rps-$c-$srv-$kind"
        echo "$p50" >>"$WORK/p50-$c-$srv-$kind"
        echo "c$c round $r $srv $kind: $rps req/s, p50 $p50 µs" >&2
      done
    done
  done
done

echo "| connections | requests | app req/s | Prism req/s | app / Prism | app p50 | Prism p50 |"
echo "|---|---|---|---|---|---|---|"
for c in $CONNS; do
  for kind in static post; do
    a="$(median <"$WORK/rps-$c-app-$kind")"
    p="$(median <"$WORK/rps-$c-prism-$kind")"
    ap="$(median <"$WORK/p50-$c-app-$kind")"
    pp="$(median <"$WORK/p50-$c-prism-$kind")"
    printf '| %s | %s | %.0f | %.0f | %.1f× | %.0f µs | %.0f µs |\n' "$c" "$kind" "$a" "$p" \
      "$(awk -v a="$a" -v b="$p" 'BEGIN { print a / b }')" "$ap" "$pp"
  done
done
c1="$(echo "$CONNS" | awk '{ print $1 }')"
awk -v a="$(median <"$WORK/p50-$c1-app-post")" -v b="$(median <"$WORK/p50-$c1-app-static")" -v c="$c1" \
  'BEGIN { printf "\napp at %s connection(s): POST with its 1 KB body validated answers at p50 %+.0f µs from the static GET.\n", c, a - b }'
