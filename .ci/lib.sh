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
