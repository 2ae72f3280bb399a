#!/usr/bin/env bash
# Drives `app serve` with the official OpenAI and Anthropic SDKs for Node (installed from npm into
# a temporary directory), against the acceptance suite's fake providers. OpenAI's SDK on /v1: a
# plain call to each provider, a call streamed with the SDK's stream helper, a two-step tool
# loop on each provider (non-streamed and streamed), a json_schema answer on each provider,
# models.list() and models.retrieve(), embeddings.create() on an OpenAI and a Gemini model
# (floats and base64), and a wrong key caught as the SDK's AuthenticationError. OpenAI's SDK on
# /v1/responses, on each provider: responses.create() (output_text), responses.stream()
# (finalResponse()), a two-step function tool loop (created and streamed) sending the output
# items back, a json_schema answer, and previous_response_id refused as a BadRequestError.
# Anthropic's SDK on /v1/messages with a personal key: messages.create and messages.stream
# (finalMessage()), with and without tools, on an anthropic/ and an openai/ model; messages.countTokens
# on an anthropic/ and a gemini/ model (a stand-in counts in front of the fakes), refused on openai/.
# Usage: .ci/sdk-check.sh [path/to/app] (default bin/app).
set -euo pipefail
cd "$(dirname "$0")/.."

APP="$(realpath "${1:-bin/app}")"
SHARED="$(realpath ../shared/acceptance)"
OPENAI_VERSION="${OPENAI_NPM_VERSION:-^7}" # the major tested; OPENAI_NPM_VERSION=latest tries the newest
ANTHROPIC_VERSION="${ANTHROPIC_NPM_VERSION:-latest}"

command -v node >/dev/null && command -v npm >/dev/null || { echo "sdk-check: node and npm are needed" >&2; exit 1; }

. .ci/lib.sh

# The official SDK, from npm.
(cd "$TMP" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent "openai@$OPENAI_VERSION" "@anthropic-ai/sdk@$ANTHROPIC_VERSION" >/dev/null)

# The fake providers, standalone, with token counting in front.
start_fake_providers
add_token_counting

# The server.
export APP_JWT_SECRET=sdk-check-secret-sdk-check-secret
start_app sdk-check

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

cat >"$TMP/tools.mjs" <<'JS'
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const fail = (msg) => { console.error("sdk-check: " + msg); process.exit(1); };
const tools = [{ type: "function", function: { name: "get_weather", description: "Current weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const ask = { role: "user", content: "What is the weather in Paris?" };

for (const model of ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"]) {
  for (const streamed of [false, true]) {
    const first = streamed
      ? await client.chat.completions.stream({ model, messages: [ask], tools }).finalChatCompletion()
      : await client.chat.completions.create({ model, messages: [ask], tools });
    const msg = first.choices[0].message;
    const call = msg.tool_calls?.[0];
    if (first.choices[0].finish_reason !== "tool_calls" || call?.function?.name !== "get_weather" || !call.id) {
      fail(`${model} (streamed: ${streamed}): no tool call in ${JSON.stringify(first)}`);
    }
    JSON.parse(call.function.arguments);
    const second = await client.chat.completions.create({ model, tools,
      messages: [ask, msg, { role: "tool", tool_call_id: call.id, content: "sunny and 21 degrees" }] });
    const text = second.choices[0].message.content;
    if (!text || !text.includes("sunny")) fail(`${model}: the answer after the tool result is ${JSON.stringify(second)}`);
    console.log(`ok  ${model} tool loop (streamed: ${streamed}): ${call.function.name}(${call.function.arguments}) -> ${JSON.stringify(text)}`);
  }
  const person = { type: "object", properties: { name: { type: "string" }, age: { type: "integer" } }, required: ["name", "age"] };
  const json = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Invent a person" }],
    response_format: { type: "json_schema", json_schema: { name: "person", schema: person, strict: true } } });
  const parsed = JSON.parse(json.choices[0].message.content);
  if (typeof parsed.name !== "string" || typeof parsed.age !== "number") fail(`${model} json_schema: ${json.choices[0].message.content}`);
  console.log(`ok  ${model} json_schema: ${json.choices[0].message.content}`);
}
JS

cat >"$TMP/anthropic.mjs" <<'JS'
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 });
const fail = (msg) => { console.error("sdk-check: " + msg); process.exit(1); };
const tools = [{ name: "get_weather", description: "Current weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];

for (const model of ["anthropic/claude-haiku-4-5", "openai/gpt-4o-mini"]) {
  const plain = { model, max_tokens: 100, system: "Answer briefly.", messages: [{ role: "user", content: "Say hello" }] };
  const m = await client.messages.create(plain);
  if (m.type !== "message" || m.content[0]?.type !== "text" || !m.content[0].text || m.stop_reason !== "end_turn" || !(m.usage.output_tokens > 0)) {
    fail(`${model} messages.create: ${JSON.stringify(m)}`);
  }
  const s = await client.messages.stream(plain).finalMessage();
  if (!s.content[0]?.text || s.stop_reason !== "end_turn" || !(s.usage.output_tokens > 0)) {
    fail(`${model} messages.stream: ${JSON.stringify(s)} (create answered ${JSON.stringify(m.content)})`);
  }
  console.log(`ok  ${model} messages.create and messages.stream: ${JSON.stringify(m.content[0].text)}`);
  for (const streamed of [false, true]) {
    const req = { model, max_tokens: 300, tools, messages: [{ role: "user", content: "What is the weather in Paris?" }] };
    const first = streamed ? await client.messages.stream(req).finalMessage() : await client.messages.create(req);
    const use = first.content.find((b) => b.type === "tool_use");
    if (first.stop_reason !== "tool_use" || use?.name !== "get_weather" || typeof use.input !== "object") {
      fail(`${model} tools (streamed: ${streamed}): ${JSON.stringify(first)}`);
    }
    const second = await client.messages.create({ ...req, messages: [...req.messages, { role: "assistant", content: first.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny and 21 degrees" }] }] });
    const text = second.content.find((b) => b.type === "text")?.text;
    if (!text?.includes("sunny")) fail(`${model}: the answer after the tool result is ${JSON.stringify(second)}`);
    console.log(`ok  ${model} tool loop (streamed: ${streamed}): get_weather(${JSON.stringify(use.input)}) -> ${JSON.stringify(text)}`);
  }
}
for (const model of ["anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"]) {
  const c = await client.messages.countTokens({ model, system: "Answer briefly.", messages: [{ role: "user", content: "Say hello please" }] });
  if (!(c.input_tokens > 0)) fail(`${model} messages.countTokens: ${JSON.stringify(c)}`);
  console.log(`ok  ${model} messages.countTokens: ${c.input_tokens}`);
}
try {
  await client.messages.countTokens({ model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  fail("countTokens on an OpenAI model was answered");
} catch (e) {
  if (!(e instanceof Anthropic.BadRequestError)) fail(`countTokens on an OpenAI model: ${e}`);
  console.log(`ok  openai/gpt-4o-mini messages.countTokens: BadRequestError (${e.status})`);
}
try {
  await new Anthropic({ baseURL, apiKey: "sk-app-" + "0".repeat(43), maxRetries: 0 }).messages.create({
    model: "anthropic/claude-haiku-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
  fail("a wrong key was accepted");
} catch (e) {
  if (!(e instanceof Anthropic.AuthenticationError)) fail(`wrong key: ${e}`);
  console.log(`ok  wrong key: AuthenticationError (${e.status})`);
}
JS
cat >"$TMP/responses.mjs" <<'JS'
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const fail = (msg) => { console.error("sdk-check: " + msg); process.exit(1); };
const tools = [{ type: "function", name: "get_weather", description: "Current weather in a city", strict: false,
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
const person = { type: "object", properties: { name: { type: "string" }, age: { type: "integer" } }, required: ["name", "age"],
  additionalProperties: false };

for (const model of ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"]) {
  const r = await client.responses.create({ model, instructions: "Answer briefly.", input: "Say hello", max_output_tokens: 100 });
  if (r.object !== "response" || r.status !== "completed" || !r.output_text || !(r.usage?.total_tokens > 0)) {
    fail(`${model} responses.create: ${JSON.stringify(r)}`);
  }
  const stream = client.responses.stream({ model, input: [{ role: "user", content: "Stream a greeting" }] });
  let deltas = 0;
  stream.on("response.output_text.delta", () => { deltas++; });
  const final = await stream.finalResponse();
  if (deltas < 2 || final.status !== "completed" || !final.output_text || !(final.usage?.total_tokens > 0)) {
    fail(`${model} responses.stream: ${deltas} deltas, final ${JSON.stringify(final)}`);
  }
  console.log(`ok  ${model} responses.create ${JSON.stringify(r.output_text)}, responses.stream ${deltas} deltas ${JSON.stringify(final.output_text)}`);
  for (const streamed of [false, true]) {
    const req = { model, tools, input: [{ role: "user", content: "What is the weather in Paris?" }] };
    const first = streamed ? await client.responses.stream(req).finalResponse() : await client.responses.create(req);
    const call = first.output.find((item) => item.type === "function_call");
    if (call?.name !== "get_weather" || !call.call_id) fail(`${model} tools (streamed: ${streamed}): ${JSON.stringify(first)}`);
    JSON.parse(call.arguments);
    const second = await client.responses.create({ model, tools, input: [...req.input, ...first.output,
      { type: "function_call_output", call_id: call.call_id, output: "sunny and 21 degrees" }] });
    if (!second.output_text.includes("sunny")) fail(`${model}: the answer after the function output is ${JSON.stringify(second)}`);
    console.log(`ok  ${model} responses tool loop (streamed: ${streamed}): ${call.name}(${call.arguments}) -> ${JSON.stringify(second.output_text)}`);
  }
  const json = await client.responses.create({ model, input: "Invent a person",
    text: { format: { type: "json_schema", name: "person", schema: person, strict: true } } });
  const parsed = JSON.parse(json.output_text);
  if (typeof parsed.name !== "string" || typeof parsed.age !== "number") fail(`${model} responses json_schema: ${json.output_text}`);
  console.log(`ok  ${model} responses json_schema: ${json.output_text}`);
}
try {
  await client.responses.create({ model: "openai/gpt-4o-mini", input: "hi", previous_response_id: "resp_123" });
  fail("previous_response_id was accepted");
} catch (e) {
  if (!(e instanceof OpenAI.BadRequestError) || e.code !== "unsupported_parameter" || e.param !== "previous_response_id") fail(`previous_response_id: ${e}`);
  console.log(`ok  previous_response_id: BadRequestError (${e.status} ${e.code})`);
}
JS
(cd "$TMP" && node check.mjs "$BASE/v1" "$KEY" && node tools.mjs "$BASE/v1" "$KEY" && node responses.mjs "$BASE/v1" "$KEY" && node anthropic.mjs "$BASE" "$KEY")
echo "sdk-check: the official OpenAI SDK works against /v1 (chat completions and responses), Anthropic's against /v1/messages"
