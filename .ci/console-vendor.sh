#!/usr/bin/env bash
# The console's third-party code, built at development time and committed (the binary embeds
# internal/console/assets; nothing is built at run time). From npm, pinned:
#   - htm's preact/standalone.module.js: Preact with its hooks and htm (tagged templates for
#     the markup, no JSX compiler), one ES module, copied as published;
#   - d3-scale's scaleBand and scaleLinear (and what they import), bundled into one ES module
#     with esbuild, so the browser loads one file and no bare module names.
# Usage: .ci/console-vendor.sh          rewrite internal/console/assets/vendor
#        .ci/console-vendor.sh --check  fail when the committed files differ from a fresh build
set -euo pipefail
cd "$(dirname "$0")/.."

HTM=3.1.1
PREACT=10.2.0 # the Preact htm's standalone build bundles (installed for its licence)
D3_SCALE=4.0.2
ESBUILD=0.28.2
OUT=internal/console/assets/vendor

command -v node >/dev/null && command -v npm >/dev/null || { echo "console-vendor: node and npm are needed" >&2; exit 1; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# Every package pinned, those d3-scale imports included, so that a fresh build is the same.
cat >"$WORK/package.json" <<JSON
{"name": "console-vendor", "private": true,
 "dependencies": {"htm": "$HTM", "preact": "$PREACT", "d3-scale": "$D3_SCALE", "esbuild": "$ESBUILD"},
 "overrides": {"d3-array": "3.2.5", "d3-interpolate": "3.0.2", "d3-color": "3.1.1", "d3-format": "3.1.3",
   "d3-time": "3.1.1", "d3-time-format": "4.1.1", "internmap": "2.0.3"}}
JSON
(cd "$WORK" && npm install --no-audit --no-fund --silent >/dev/null)

mkdir -p "$WORK/out"
cp "$WORK/node_modules/htm/preact/standalone.module.js" "$WORK/out/preact-htm.js"
echo "export { scaleBand, scaleLinear } from 'd3-scale';" >"$WORK/d3-entry.js"
(cd "$WORK" && node_modules/.bin/esbuild d3-entry.js --bundle --format=esm --minify --legal-comments=none \
  --log-level=warning --outfile=out/d3-scale.js)
{
  echo "Third-party code of the console, from npm (see .ci/console-vendor.sh)."
  echo
  echo "preact-htm.js: htm@$HTM preact/standalone.module.js (Preact 10 with hooks, and htm)"
  echo "d3-scale.js: d3-scale@$D3_SCALE scaleBand and scaleLinear, with the d3-array,"
  echo "  d3-interpolate, d3-color, d3-format, d3-time and d3-time-format code they use,"
  echo "  bundled by esbuild@$ESBUILD"
  for pkg in htm preact d3-scale d3-array d3-interpolate d3-color d3-format d3-time d3-time-format internmap; do
    dir="$WORK/node_modules/$pkg"
    [ -d "$dir" ] || continue
    lic="$(ls "$dir" | grep -iE '^licen[cs]e' | head -1)"
    echo
    echo "==== $pkg@$(node -p "require('$dir/package.json').version") ($(node -p "require('$dir/package.json').license")) ===="
    [ -n "$lic" ] && cat "$dir/$lic"
  done
} >"$WORK/out/LICENSES.txt"

if [ "${1:-}" = "--check" ]; then
  if ! diff -r "$WORK/out" "$OUT" >/dev/null; then
    diff -r "$WORK/out" "$OUT" | head -20 >&2
    echo "console-vendor: $OUT is not what .ci/console-vendor.sh builds; run it and commit the result" >&2
    exit 1
  fi
  echo "console-vendor: $OUT is current"
  exit 0
fi
rm -rf "$OUT"
cp -r "$WORK/out" "$OUT"
ls -l "$OUT"
