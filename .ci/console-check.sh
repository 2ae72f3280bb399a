#!/usr/bin/env bash
# The web console in a real browser: Debian's Chromium (installed with apt-get when missing)
# driven by playwright-core (npm, installed into a temporary directory, never into the
# repository; no browser download). `app serve` runs against the acceptance suite's fake
# providers; a user makes calls on three providers and an admin is granted with the CLI, then
# .ci/console-check.mjs signs in as each and checks what the console shows against the API.
# Usage: .ci/console-check.sh [path/to/app] (default bin/app).
# PLAYWRIGHT_DIR=dir reuses an install of playwright-core there; CONSOLE_SCREENSHOTS=dir saves
# screenshots of each view there.
set -euo pipefail
cd "$(dirname "$0")/.."

APP="$(realpath "${1:-bin/app}")"
SHARED="$(realpath ../shared/acceptance)"
PLAYWRIGHT_VERSION=1.65.1

command -v node >/dev/null && command -v npm >/dev/null || { echo "console-check: node and npm are needed" >&2; exit 1; }
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
CHROMIUM="$CHROMIUM" .ci/chromium.sh

. .ci/lib.sh

PLAYWRIGHT_DIR="${PLAYWRIGHT_DIR:-$TMP/playwright}"
if [ ! -f "$PLAYWRIGHT_DIR/node_modules/playwright-core/package.json" ]; then
  mkdir -p "$PLAYWRIGHT_DIR"
  (cd "$PLAYWRIGHT_DIR" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent "playwright-core@$PLAYWRIGHT_VERSION" >/dev/null)
fi

start_fake_providers

export APP_JWT_SECRET=console-check-secret-console-check-secret
export APP_RATELIMIT_LIMIT=100000 APP_RATELIMIT_AUTH_LIMIT=100000
start_app console-check

json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
register() { # email password name -> access token
  curl -fsS -H 'Content-Type: application/json' -d "{\"email\":\"$1\",\"password\":\"$2\",\"name\":\"$3\"}" \
    "$BASE/api/auth/register" | json '["accessToken"]'
}
USER_EMAIL=ada@example.com USER_PASSWORD=console-check-1
ADMIN_EMAIL=grace@example.com ADMIN_PASSWORD=console-check-2
TOKEN="$(register "$USER_EMAIL" "$USER_PASSWORD" "Ada Lovelace")"
# The admin's name is as long as a name may be, without a space: the Users table must still
# show every row's controls.
register "$ADMIN_EMAIL" "$ADMIN_PASSWORD" "Grace$(printf 'W%.0s' $(seq 95))" >/dev/null
"$APP" users grant "$ADMIN_EMAIL" admin --data-dir "$TMP/data" >/dev/null

# Calls on three providers (a long prompt, so that the cost shows in cents).
PROMPT="$(python3 -c 'print("w " * 20000)')"
call() { # path model
  curl -fsS -o /dev/null -H 'Content-Type: application/json' -H "Authorization: Bearer $TOKEN" \
    -d "{\"model\":\"$2\",\"maxTokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}]}" "$BASE$1"
}
call /api/ai/openai/chat gpt-5-mini
call /api/ai/openai/chat gpt-5-mini
call /api/ai/anthropic/messages claude-haiku-4-5
call /api/ai/gemini/generate gemini-2.5-flash
for _ in $(seq 100); do
  n="$(curl -fsS -H "Authorization: Bearer $TOKEN" "$BASE/api/ai/usage" | json '["totalRequests"]')"
  [ "$n" = 4 ] && break
  sleep 0.1
done
[ "$n" = 4 ] || { echo "console-check: usage counts $n calls, not 4" >&2; exit 1; }

CONFIG="$(python3 -c 'import json,sys; a=sys.argv[1:]; print(json.dumps({"base": a[0], "chromium": a[1], "playwright": a[2],
  "user": {"email": a[3], "password": a[4]}, "admin": {"email": a[5], "password": a[6]}, "screenshots": a[7] or None}))' \
  "$BASE" "$CHROMIUM" "$PLAYWRIGHT_DIR/node_modules/playwright-core" "$USER_EMAIL" "$USER_PASSWORD" "$ADMIN_EMAIL" "$ADMIN_PASSWORD" \
  "${CONSOLE_SCREENSHOTS:+$(realpath "$CONSOLE_SCREENSHOTS")}")"
node .ci/console-check.mjs "$CONFIG"
echo "console-check: the console works in Chromium"
