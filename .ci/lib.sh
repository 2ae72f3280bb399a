# Shared by the CI scripts that drive the built binary: sourced after setting SHARED (the
# acceptance suite's directory). Sets TMP (removed on exit) and PIDS (killed on exit).

TMP="$(mktemp -d)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_fake_providers runs the acceptance suite's fake OpenAI, Anthropic and Gemini on one
# loopback port and sets FAKE to its base URL.
start_fake_providers() {
  python3 -u - "$SHARED" >"$TMP/fake.port" 2>"$TMP/fake.log" <<'PY' &
import sys, time
sys.path.insert(0, sys.argv[1])
from lib.fakeai import FakeProviders
fake = FakeProviders().start()
print(fake.port, flush=True)
while True:
    time.sleep(3600)
PY
  PIDS+=($!)
  for _ in $(seq 50); do [ -s "$TMP/fake.port" ] && break; sleep 0.1; done
  FAKE="http://127.0.0.1:$(cat "$TMP/fake.port")"
}

# start_app NAME: runs "$APP" serve on a free port against the fake providers (FAKE), with the
# APP_* variables the caller exported, its data in $TMP/data and its log in $TMP/app.log;
# sets PORT and BASE and waits until /api/health answers (NAME prefixes the failure).
start_app() {
  PORT="$(free_port)"
  BASE="http://127.0.0.1:$PORT"
  APP_AI_OPENAI_API_KEY=fake-openai APP_AI_ANTHROPIC_API_KEY=fake-anthropic APP_AI_GEMINI_API_KEY=fake-gemini \
  APP_AI_OPENAI_BASE_URL="$FAKE/v1" APP_AI_ANTHROPIC_BASE_URL="$FAKE/v1" APP_AI_GEMINI_BASE_URL="$FAKE/v1beta" \
  APP_LOG_LEVEL="${APP_LOG_LEVEL:-warn}" \
    "$APP" serve --addr "127.0.0.1:$PORT" --data-dir "$TMP/data" >"$TMP/app.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 600); do curl -fsS "$BASE/api/health" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fsS "$BASE/api/health" >/dev/null || { echo "$1: app serve did not start" >&2; cat "$TMP/app.log" >&2; exit 1; }
}
