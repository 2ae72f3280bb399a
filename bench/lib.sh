# Shared by the bench scripts (sourced): ROOT, a temporary WORK folder, processes started
# pinned to a CPU and stopped by PID (with their children) on exit, waiting for a port, wrk,
# the bench parts (bench/aibench) and medians.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d)"
SERVER_CPU="${SERVER_CPU:-0}" # the servers measured
WRK_CPU="${WRK_CPU:-1}"       # the fake upstreams and the clients
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

# need_wrk installs wrk with apt-get when it is missing.
need_wrk() {
  command -v wrk >/dev/null && return 0
  echo "wrk not found: installing it with apt-get" >&2
  apt-get install -y wrk >&2 || { echo "could not install wrk" >&2; exit 1; }
}

# build_parts builds the shipped binary (when bin/app is missing) and bench/aibench into WORK.
build_parts() {
  [ -x "$ROOT/bin/app" ] || (cd "$ROOT" && make build >&2) || exit 1
  (cd "$ROOT" && go build -o "$WORK/aibench" ./bench/aibench) || { echo "could not build bench/aibench" >&2; exit 1; }
}

# start NAME CPU CMD...: runs CMD in the background in WORK, pinned to CPU, its output in
# WORK/NAME.log and its PID in LAST_PID.
start() {
  local name="$1" cpu="$2"; shift 2
  (cd "$WORK" && exec taskset -c "$cpu" "$@") >"$WORK/$name.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}

# wait_port PORT [PATH]: until something answers HTTP there (20 s).
wait_port() {
  local i
  for i in $(seq 1 200); do
    curl -s -o /dev/null "http://127.0.0.1:$1${2:-/}" && return 0
    sleep 0.1
  done
  return 1
}

# median of the numbers on stdin, one a line.
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# The AI benchmarks' parts: `app serve`'s environment in front of the fake OpenAI upstream on
# port $1 (in APP_ENV), the chat bodies app is sent, a new user's access token, a wrk script.
ai_app_env() {
  APP_ENV=(APP_AI_OPENAI_BASE_URL="http://127.0.0.1:$1/v1" APP_AI_OPENAI_API_KEY=sk-bench
    APP_JWT_SECRET=bench-secret-bench-secret-bench-secret APP_RATELIMIT_LIMIT=1000000000)
}
APP_BODY='{"messages":[{"role":"user","content":"Say hello in one short sentence."}],"model":"gpt-4o-mini"}'
STREAM_BODY='{"messages":[{"role":"user","content":"Count slowly."}],"model":"gpt-4o-mini","stream":true}'

# register PORT EMAIL: registers a user on the app at PORT and prints its access token.
register() {
  curl -s "http://127.0.0.1:$1/api/auth/register" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$2\",\"password\":\"secret1\",\"name\":\"Bench\"}" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p'
}

# wrk_lua FILE BODY HEADER-LINES...: a wrk script that POSTs the JSON BODY with the headers.
wrk_lua() {
  local f="$1" body="$2"; shift 2
  {
    echo 'wrk.method = "POST"'
    printf 'wrk.body = [[%s]]\n' "$body"
    echo 'wrk.headers["Content-Type"] = "application/json"'
    for h in "$@"; do echo "$h"; done
  } >"$f"
}
