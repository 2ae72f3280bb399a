#!/usr/bin/env bash
# Drives `app serve` with the official OpenAI SDK for Node (installed from npm into a temporary
# directory), against the acceptance suite's fake providers: a plain call to each provider, a
# call streamed with the SDK's stream helper, models.list() and models.retrieve(),
# embeddings.create() on an OpenAI and a Gemini model (floats and base64), and a wrong key
# caught as the SDK's AuthenticationError. Usage: .ci/sdk-check.sh [path/to/app] (default bin/app).
set -euo pipefail
cd "$(dirname "$0")/.."

APP="$(realpath "${1:-bin/app}")"
SHARED="$(realpath ../shared/acceptance)"
OPENAI_VERSION="${OPENAI_NPM_VERSION:-^7}" # the major tested; OPENAI_NPM_VERSION=latest tries the newest

command -v node >/dev/null && command -v npm >/dev/null || { echo "sdk-check: node and npm are needed" >&2; exit 1; }

. .ci/lib.sh

# The official SDK, from npm.
(cd "$TMP" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent "openai@$OPENAI_VERSION" >/dev/null)

# The fake providers, standalone.
start_fake_providers

# The server.
PORT="$(free_port)"
BASE="http://127.0.0.1:$PORT"
APP_JWT_SECRET=sdk-check-secret-sdk-check-secret \
APP_AI_OPENAI_API_KEY=fake-openai APP_AI_ANTHROPIC_API_KEY=fake-anthropic APP_AI_GEMINI_API_KEY=fake-gemini \
APP_AI_OPENAI_BASE_URL="$FAKE/v1" APP_AI_ANTHROPIC_BASE_URL="$FAKE/v1" APP_AI_GEMINI_BASE_URL="$FAKE/v1beta" \
APP_LOG_LEVEL=warn \
  "$APP" serve --addr "127.0.0.1:$PORT" --data-dir "$TMP/data" >"$TMP/app.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 600); do curl -fsS "$BASE/api/health" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$BASE/api/health" >/dev/null || { echo "sdk-check: app serve did not start" >&2; cat "$TMP/app.log" >&2; exit 1; }

# A user and a personal API key.
TOKEN="$(curl -fsS -H 'Content-Type: application/json' -d '{"email":"sdk@example.com","password":"sdk-check-1","name":"SDK"}' \
  "$BASE/api/auth/register" | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')"
KEY="$(curl -fsS -H 'Content-Type: application/json' -H "Authorization: Bearer $TOKEN" -d '{"name":"sdk-check"}' \
  "$BASE/api/keys" | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')"

cat >"$TMP/check.mjs" <<'JS'
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const fail = (msg) => { console.error("sdk-check: " + msg); process.exit(1); };

for (const model of ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"]) {
  const c = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Say hello" }], max_tokens: 50 });
  const text = c.choices[0]?.message?.content;
  if (c.object !== "chat.completion" || !text || c.choices[0].finish_reason !== "stop" || !(c.usage?.total_tokens > 0)) {
    fail(`${model}: unexpected answer ${JSON.stringify(c)}`);
  }
  console.log(`ok  ${model}: ${JSON.stringify(text)} (${c.usage.total_tokens} tokens)`);
}

const stream = client.chat.completions.stream({
  model: "anthropic/claude-haiku-4-5", messages: [{ role: "user", content: "Stream a greeting" }],
  stream_options: { include_usage: true },
});
let pieces = 0;
stream.on("content", () => { pieces++; });
const final = await stream.finalChatCompletion();
if (pieces < 2 || !final.choices[0].message.content || !(final.usage?.total_tokens > 0)) {
  fail(`stream: ${pieces} pieces, final ${JSON.stringify(final)}`);
}
console.log(`ok  stream helper: ${pieces} pieces, ${JSON.stringify(final.choices[0].message.content)}`);

const models = [];
for await (const m of client.models.list()) models.push(m.id);
if (!models.includes("openai/gpt-4o-mini") && models.length === 0) fail("models.list() is empty");
console.log(`ok  models.list(): ${models.length} models, e.g. ${models.slice(0, 3).join(", ")}`);
const one = await client.models.retrieve(models[0]);
if (one.id !== models[0]) fail(`models.retrieve(${models[0]}) answered ${JSON.stringify(one)}`);
console.log(`ok  models.retrieve(${models[0]})`);

// embeddings.create: the SDK's default (it asks for base64 and decodes it), "float", and
// "base64" (left to the caller), on an OpenAI and a Gemini model.
for (const model of ["openai/text-embedding-3-small", "gemini/gemini-embedding-001"]) {
  for (const encoding_format of [undefined, "float", "base64"]) {
    const input = ["hello world", "a second text"];
    const e = await client.embeddings.create({ model, input, ...(encoding_format ? { encoding_format } : {}) });
    const vectors = e.data.map((d) => (typeof d.embedding === "string"
      ? Array.from(new Float32Array(Uint8Array.from(Buffer.from(d.embedding, "base64")).buffer)) : d.embedding));
    if (e.object !== "list" || e.data.length !== input.length || e.data.some((d, i) => d.index !== i)
      || vectors.some((v) => !Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== "number" || !Number.isFinite(x)))
      || (encoding_format === "base64") !== (typeof e.data[0].embedding === "string")
      || !(e.usage?.prompt_tokens > 0) || e.usage.total_tokens !== e.usage.prompt_tokens) {
      fail(`embeddings ${model} ${encoding_format ?? "(default)"}: unexpected answer ${JSON.stringify(e).slice(0, 400)}`);
    }
    console.log(`ok  embeddings ${model} ${encoding_format ?? "(SDK default, base64)"}: ${vectors.length} × ${vectors[0].length} floats, ${e.usage.prompt_tokens} tokens`);
  }
}

try {
  await new OpenAI({ baseURL, apiKey: "sk-app-" + "0".repeat(43), maxRetries: 0 }).chat.completions.create({
    model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  fail("a wrong key was accepted");
} catch (e) {
  if (!(e instanceof OpenAI.AuthenticationError) || e.code !== "invalid_api_key") fail(`wrong key: ${e}`);
  console.log(`ok  wrong key: AuthenticationError (${e.status} ${e.code})`);
}
JS
(cd "$TMP" && node check.mjs "$BASE/v1" "$KEY")
echo "sdk-check: the official OpenAI SDK works against /v1"
