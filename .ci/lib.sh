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

# add_token_counting puts in front of the fake providers (FAKE) a stand-in that answers
# Anthropic's messages/count_tokens and Gemini's countTokens, which the fakes lack (one token
# per word of the body's text), and passes every other request on; FAKE becomes its URL.
add_token_counting() {
  node - "$FAKE" >"$TMP/counting.port" 2>"$TMP/counting.log" <<'JS' &
const http = require("http");
const upstream = new URL(process.argv[2]);
const words = (v) => typeof v === "string" ? v.split(/\s+/).filter(Boolean).length
  : Array.isArray(v) ? v.reduce((n, x) => n + words(x), 0)
  : v && typeof v === "object" ? Object.entries(v).reduce((n, [k, x]) => n + (k === "model" ? 0 : words(x)), 0) : 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const path = req.url.split("?")[0];
    if (req.method === "POST" && (path.endsWith("/messages/count_tokens") || path.endsWith(":countTokens"))) {
      const n = words(JSON.parse(body.toString() || "{}"));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(path.endsWith(":countTokens") ? { totalTokens: n } : { input_tokens: n }));
      return;
    }
    const out = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    });
    out.on("error", () => { res.writeHead(502); res.end(); });
    out.end(body);
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
JS
  PIDS+=($!)
  for _ in $(seq 50); do [ -s "$TMP/counting.port" ] && break; sleep 0.1; done
  FAKE="http://127.0.0.1:$(cat "$TMP/counting.port")"
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
