#!/usr/bin/env bash
# The replica path: every test that needs a shared MongoDB (TEST_MONGODB_URI: two processes on
# one budget, two recorders on one rollup, two `app serve` replicas) runs against the embedded
# store served on its own by `app store serve`, which keeps single-document writes atomic for
# every client. None of them may skip. Usage: .ci/replicas.sh [path/to/app] (default bin/app).
set -euo pipefail
cd "$(dirname "$0")/.."

APP="$(realpath "${1:-bin/app}")"
. .ci/lib.sh

PORT="$(free_port)"
"$APP" store serve --data-dir "$TMP/store" --listen "127.0.0.1:$PORT" >"$TMP/store.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do
  grep -q "^mongodb://" "$TMP/store.log" && break
  sleep 0.1
done
URI="$(grep -m1 "^mongodb://" "$TMP/store.log")" || { echo "app store serve did not start: $(cat "$TMP/store.log")" >&2; exit 1; }

TEST_MONGODB_URI="$URI" go test -count=1 -v ./... >"$TMP/test.log" 2>&1 || { grep -E -- "^(--- FAIL|FAIL|panic)" -A5 "$TMP/test.log" | head -60; exit 1; }
if grep -E -- "--- SKIP" "$TMP/test.log"; then
  echo "replicas: tests skipped with TEST_MONGODB_URI set" >&2
  exit 1
fi
echo "replicas: every test passed against $URI, none skipped"
