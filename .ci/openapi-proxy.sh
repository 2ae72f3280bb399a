#!/usr/bin/env bash
# Black-box check of docs/openapi.yaml: `app serve` behind a validating proxy (Stoplight Prism,
# installed from npm into a temporary directory), and a set of requests covering every
# operation sent through it, valid ones and deliberately invalid ones. Prism reports each
# difference between an exchange and the description in the answer's sl-violations header. The
# run fails on any violation of an answer, and on any violation of a request that the server
# answered with a 2xx or that was meant to be valid. The AI providers are the acceptance
# suite's fakes. Usage: .ci/openapi-proxy.sh [path/to/app] (default bin/app).
# PRISM_DIR=dir reuses an install of @stoplight/prism-cli there.
set -euo pipefail
cd "$(dirname "$0")/.."

APP="$(realpath "${1:-bin/app}")"
SHARED="$(realpath ../shared/acceptance)"
SPEC="$(realpath docs/openapi.yaml)"
PRISM_VERSION="${PRISM_VERSION:-5.14}" # runs on Node 20 (the newest 5.x needs Node 24)

command -v node >/dev/null && command -v npm >/dev/null || { echo "openapi-proxy: node and npm are needed" >&2; exit 1; }

start=$(date +%s)
. .ci/lib.sh

# The validating proxy, from npm.
PRISM_DIR="${PRISM_DIR:-$TMP/prism}"
if [ ! -x "$PRISM_DIR/node_modules/.bin/prism" ]; then
  mkdir -p "$PRISM_DIR"
  (cd "$PRISM_DIR" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent "@stoplight/prism-cli@$PRISM_VERSION" >/dev/null)
fi
PRISM="$PRISM_DIR/node_modules/.bin/prism"

# The fake providers, standalone, with token counting in front.
start_fake_providers
add_token_counting

# The server: limits out of reach, the storage routes allowed to reach its own embedded store.
export APP_JWT_SECRET=openapi-proxy-secret-openapi-proxy-secret
export APP_RATELIMIT_LIMIT=1000000 APP_RATELIMIT_AUTH_LIMIT=1000000
export APP_DBCHECK_ALLOWED_HOSTS=127.0.0.1
start_app openapi-proxy
MONGO_URI="$(cat "$TMP/data/embedded-mongodb.uri")"

# Prism in front of it. Without --errors it forwards every request, answers what the server
# answered, and names each violation in the sl-violations header (with --errors it would
# replace the server's answer by its own error, hiding what the server said).
PPORT="$(free_port)"
"$PRISM" proxy "$SPEC" "$BASE" --port "$PPORT" --host 127.0.0.1 --errors=false >"$TMP/prism.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do curl -fsS "http://127.0.0.1:$PPORT/api/health" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "http://127.0.0.1:$PPORT/api/health" >/dev/null || { echo "openapi-proxy: prism did not start" >&2; cat "$TMP/prism.log" >&2; exit 1; }

# An admin, for the admin routes: granted before its first authenticated request.
ADMIN_EMAIL="openapi-admin@example.com"
curl -fsS -H 'Content-Type: application/json' -d '{"email":"'"$ADMIN_EMAIL"'","password":"admin-pass-1","name":"Admin"}' \
  "$BASE/api/auth/register" >/dev/null
"$APP" users grant "$ADMIN_EMAIL" admin --data-dir "$TMP/data" >/dev/null

node .ci/openapi-traffic.mjs "http://127.0.0.1:$PPORT" "$MONGO_URI" "$ADMIN_EMAIL" || {
  echo "--- the proxy's violations (last 40)" >&2; grep "Violation" "$TMP/prism.log" | tail -40 >&2; exit 1; }
echo "openapi-proxy: every exchange matches docs/openapi.yaml ($(( $(date +%s) - start ))s)"
