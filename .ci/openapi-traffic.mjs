// Sends requests covering every operation of the API through a validating proxy (Prism) and
// fails on a violation it reports in an answer's sl-violations header: any violation of an
// answer, and a violation of a request the server answered with a 2xx or that was meant to be
// valid. Every operation of the description must have been called, and answered with a 2xx by
// at least one request. Usage: node openapi-traffic.mjs PROXY_URL MONGODB_URI ADMIN_EMAIL
const [proxy, mongoURI, adminEmail] = process.argv.slice(2);

const failures = [];
const called = new Map(); // operationId -> statuses answered
let exchanges = 0;

// send makes one exchange. op is the operation's id in the description; valid says whether the
// request is meant to match the description (a deliberately bad request is not); want is the
// status expected from the server.
async function send(op, method, path, { body, token, raw, headers = {}, want, valid = true } = {}) {
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  let payload;
  if (raw !== undefined) {
    payload = raw;
    h["Content-Type"] = "application/json";
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    h["Content-Type"] = "application/json";
  }
  const res = await fetch(proxy + path, { method, headers: h, body: payload });
  const text = await res.text();
  exchanges++;
  const statuses = called.get(op) ?? [];
  statuses.push(res.status);
  called.set(op, statuses);
  const label = `${op}: ${method} ${path} -> ${res.status}`;
  if (want !== undefined && res.status !== want) {
    failures.push(`${label}: want ${want}; body ${text.slice(0, 300)}`);
  }
  const header = res.headers.get("sl-violations");
  if (!valid && !(header ?? "").includes('"request')) {
    // A request meant to break the description that the proxy let pass: either the
    // description allows it, or the proxy no longer reports, and a clean run proves nothing.
    failures.push(`${label}: a request meant to be invalid drew no request violation from the proxy`);
  }
  if (header) {
    let violations;
    try {
      violations = JSON.parse(header);
    } catch {
      violations = [{ location: ["?"], message: header }];
    }
    for (const v of violations) {
      const where = (v.location ?? []).join(".");
      const isResponse = (v.location ?? [])[0] === "response";
      if (isResponse || res.status < 300 || valid) {
        failures.push(`${label}: ${where}: ${v.message} (${v.code ?? ""}, ${v.severity ?? ""}); body ${text.slice(0, 200)}`);
      }
    }
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

const chat = (extra = {}) => ({ messages: [{ role: "user", content: "Say hello" }], maxTokens: 32, ...extra });

// Service.
await send("root", "GET", "/api", { want: 200 });
await send("rootSlash", "GET", "/api/", { want: 200 });
await send("health", "GET", "/api/health", { want: 200 });
const spec = (await send("openapi", "GET", "/api/openapi.json", { want: 200 })).json;

// Accounts.
const email = `openapi-${Date.now()}@example.com`;
const reg = await send("register", "POST", "/api/auth/register", { body: { email, password: "secret-1", name: "Prism" }, want: 201 });
await send("register", "POST", "/api/auth/register", { body: { email, password: "secret-1", name: "Prism" }, want: 409 });
await send("register", "POST", "/api/auth/register", { body: { email: "not-an-email", password: "1", name: "" }, want: 400, valid: false });
const tok = reg.json?.accessToken;
await send("login", "POST", "/api/auth/login", { body: { email, password: "secret-1" }, want: 200 });
await send("login", "POST", "/api/auth/login", { body: { email, password: "wrong-pass" }, want: 401 });
await send("login", "POST", "/api/auth/login", { body: { email, password: "x".repeat(1100 * 1024) }, want: 413 });
const admin = (await send("login", "POST", "/api/auth/login", { body: { email: adminEmail, password: "admin-pass-1" }, want: 200 })).json?.accessToken;
await send("profile", "GET", "/api/auth/profile", { token: tok, want: 200 });
await send("profile", "GET", "/api/auth/profile", { want: 401, valid: false });

// Personal API keys.
const key = (await send("keyCreate", "POST", "/api/keys", { token: tok, body: { name: "prism", expiresInDays: null }, want: 201 })).json;
const key2 = (await send("keyCreate", "POST", "/api/keys", { token: tok, body: { name: "prism-30", expiresInDays: 30 }, want: 201 })).json;
await send("keyCreate", "POST", "/api/keys", { token: tok, body: { name: "bad", expiresInDays: 0 }, want: 400, valid: false });
await send("keyList", "GET", "/api/keys", { token: tok, want: 200 });

// The AI routes, usage and budget, with the token and with a key.
await send("aiOpenAI", "POST", "/api/ai/openai/chat", { token: tok, body: chat({ messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }] }), want: 200 });
await send("aiAnthropic", "POST", "/api/ai/anthropic/messages", { token: key.key, body: chat({ temperature: 1 }), want: 200 });
await send("aiGemini", "POST", "/api/ai/gemini/generate", { token: tok, body: chat({ temperature: 1.5 }), want: 200 });
await send("aiOpenAI", "POST", "/api/ai/openai/chat", { token: tok, body: chat({ stream: true }), want: 200 });
await send("aiAnthropic", "POST", "/api/ai/anthropic/messages", { token: tok, body: chat({ temperature: 1.5 }), want: 400, valid: false });
await send("aiAnthropic", "POST", "/api/ai/anthropic/messages", { token: tok, body: { messages: [{ role: "system", content: "x" }] }, want: 400, valid: false });
await send("aiGemini", "POST", "/api/ai/gemini/generate", { token: tok, body: { messages: "nope" }, want: 400, valid: false });
await send("usageSummary", "GET", "/api/ai/usage?days=7", { token: tok, want: 200 });
await send("usageSummary", "GET", "/api/ai/usage?days=367", { token: tok, want: 400, valid: false });
await send("usageProviders", "GET", "/api/ai/usage/providers", { token: key.key, want: 200 });
await send("aiBudget", "GET", "/api/ai/budget", { token: key.key, want: 200 });
await send("usageDaily", "GET", "/api/ai/usage/daily?days=7", { token: tok, want: 200 });
await send("usageDaily", "GET", "/api/ai/usage/daily", { token: key.key, want: 200 });
await send("usageDaily", "GET", "/api/ai/usage/daily?days=0", { token: tok, want: 400, valid: false });

// Administration of users (the console's Users page).
const userId = reg.json?.user?.id;
await send("adminUsers", "GET", "/api/admin/users", { token: admin, want: 200 });
await send("adminUsers", "GET", "/api/admin/users", { token: tok, want: 403 });
await send("adminSetBudget", "PUT", `/api/admin/users/${userId}/budget`, { token: admin, body: { limit: 12.5 }, want: 200 });
await send("adminSetBudget", "PUT", `/api/admin/users/${userId}/budget`, { token: admin, body: { limit: null }, want: 200 });
await send("adminSetBudget", "PUT", `/api/admin/users/${userId}/budget`, { token: admin, body: { limit: -1 }, want: 400, valid: false });
await send("adminSetBudget", "PUT", "/api/admin/users/65f000000000000000000001/budget", { token: admin, body: { limit: 1 }, want: 404 });
await send("adminSetBudget", "PUT", `/api/admin/users/${userId}/budget`, { token: tok, body: { limit: 1 }, want: 403 });
await send("adminGrantRole", "PUT", `/api/admin/users/${userId}/roles/admin`, { token: admin, want: 200 });
await send("adminGrantRole", "PUT", `/api/admin/users/${userId}/roles/root`, { token: admin, want: 400 });
await send("adminRevokeRole", "DELETE", `/api/admin/users/${userId}/roles/admin`, { token: admin, want: 200 });
await send("adminRevokeRole", "DELETE", "/api/admin/users/65f000000000000000000001/roles/admin", { token: admin, want: 404 });

// The OpenAI-compatible /v1.
for (const model of ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"]) {
  await send("v1ChatCompletions", "POST", "/v1/chat/completions", { token: key.key, body: { model, messages: [{ role: "user", content: "Say hello" }], max_tokens: 50 }, want: 200 });
}
await send("v1ChatCompletions", "POST", "/v1/chat/completions", {
  token: key.key, want: 200,
  body: { model: "anthropic/claude-haiku-4-5", messages: [{ role: "developer", content: "Be brief." }, { role: "user", content: [{ type: "text", text: "Stream" }] }], stream: true, stream_options: { include_usage: true } },
});
const weather = { type: "function", function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } };
for (const model of ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"]) {
  const first = (await send("v1ChatCompletions", "POST", "/v1/chat/completions", { token: key.key, want: 200,
    body: { model, messages: [{ role: "user", content: "Weather in Paris?" }], tools: [weather], tool_choice: "auto", parallel_tool_calls: true } })).json;
  const msg = first.choices[0].message;
  await send("v1ChatCompletions", "POST", "/v1/chat/completions", { token: key.key, want: 200,
    body: { model, tools: [weather], messages: [{ role: "user", content: "Weather in Paris?" }, msg, { role: "tool", tool_call_id: msg.tool_calls[0].id, content: "sunny" }] } });
}
await send("v1ChatCompletions", "POST", "/v1/chat/completions", { token: key.key, want: 200,
  body: { model: "anthropic/claude-haiku-4-5", messages: [{ role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "low" } }] }],
    response_format: { type: "json_schema", json_schema: { name: "thing", schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } } } } });
await send("v1ChatCompletions", "POST", "/v1/chat/completions", { token: key.key, want: 200, body: { model: "gemini/gemini-2.5-flash", messages: [{ role: "user", content: "JSON" }], response_format: { type: "json_object" } } });
await send("v1ChatCompletions", "POST", "/v1/chat/completions", { token: key.key, body: { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }], n: 2 }, want: 400, valid: false });
await send("v1ChatCompletions", "POST", "/v1/chat/completions", { token: "sk-app-" + "0".repeat(43), body: { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }, want: 401 });
for (const [model, input, extra] of [
  ["openai/text-embedding-3-small", ["hello world", "a second text"], {}],
  ["openai/text-embedding-3-small", "hello world", { encoding_format: "base64", dimensions: 16, user: "u-1" }],
  ["openai/text-embedding-3-small", [[1, 2, 3], [4]], { encoding_format: "float" }],
  ["gemini/gemini-embedding-001", ["hello gemini world"], { encoding_format: "base64" }],
]) {
  await send("v1Embeddings", "POST", "/v1/embeddings", { token: key.key, body: { model, input, ...extra }, want: 200 });
}
await send("v1Embeddings", "POST", "/v1/embeddings", { token: tok, body: { model: "anthropic/claude-haiku-4-5", input: "hello" }, want: 400 });
await send("v1Embeddings", "POST", "/v1/embeddings", { token: key.key, body: { model: "openai/text-embedding-3-small", input: [] }, want: 400, valid: false });
// Anthropic's Messages API.
const anthropicHeaders = { "x-api-key": key.key, "anthropic-version": "2023-06-01" };
for (const model of ["anthropic/claude-haiku-4-5", "openai/gpt-4o-mini"]) {
  await send("v1Messages", "POST", "/v1/messages", { headers: anthropicHeaders, want: 200,
    body: { model, max_tokens: 50, system: "Be brief.", messages: [{ role: "user", content: "Say hello" }], metadata: { user_id: "u1" } } });
  const tools = [{ name: "get_weather", description: "Weather", input_schema: weather.function.parameters }];
  const first = (await send("v1Messages", "POST", "/v1/messages", { headers: anthropicHeaders, want: 200,
    body: { model, max_tokens: 100, tools, tool_choice: { type: "any" }, messages: [{ role: "user", content: "Weather in Paris?" }] } })).json;
  const use = first.content.find((b) => b.type === "tool_use");
  await send("v1Messages", "POST", "/v1/messages", { headers: anthropicHeaders, want: 200,
    body: { model, max_tokens: 100, tools, messages: [{ role: "user", content: "Weather in Paris?" }, { role: "assistant", content: first.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] }] } });
}
await send("v1Messages", "POST", "/v1/messages", { token: key.key, want: 200, body: { model: "anthropic/claude-haiku-4-5", max_tokens: 50, stream: true, messages: [{ role: "user", content: "Stream" }] } });
await send("v1Messages", "POST", "/v1/messages", { headers: anthropicHeaders, want: 400, valid: false, body: { model: "anthropic/claude-haiku-4-5", messages: [{ role: "user", content: "hi" }] } });
await send("v1Messages", "POST", "/v1/messages", { headers: { "x-api-key": "sk-app-" + "0".repeat(43) }, want: 401, body: { model: "anthropic/claude-haiku-4-5", max_tokens: 5, messages: [{ role: "user", content: "hi" }] } });
// Anthropic's token counting (by the stand-in in front of the fakes), and its refusals.
for (const model of ["anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"]) {
  await send("v1MessagesCountTokens", "POST", "/v1/messages/count_tokens", { headers: anthropicHeaders, want: 200,
    body: { model, system: "Be brief.", messages: [{ role: "user", content: "Count me please" }] } });
}
await send("v1MessagesCountTokens", "POST", "/v1/messages/count_tokens", { headers: anthropicHeaders, want: 400,
  body: { model: "openai/gpt-4o-mini", messages: [{ role: "user", content: "Count me" }] } });
await send("v1MessagesCountTokens", "POST", "/v1/messages/count_tokens", { headers: anthropicHeaders, want: 400, valid: false,
  body: { model: "anthropic/claude-haiku-4-5" } });
await send("v1MessagesCountTokens", "POST", "/v1/messages/count_tokens", { headers: { "x-api-key": "sk-app-" + "0".repeat(43) }, want: 401,
  body: { model: "anthropic/claude-haiku-4-5", messages: [{ role: "user", content: "hi" }] } });
// OpenAI's Responses API: plain, streamed, a tool loop, JSON output, and its refusals.
const fn = { type: "function", name: "get_weather", description: "Weather", parameters: weather.function.parameters };
for (const model of ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"]) {
  await send("v1Responses", "POST", "/v1/responses", { token: key.key, want: 200,
    body: { model, instructions: "Be brief.", input: "Say hello", max_output_tokens: 50, metadata: { run: "prism" } } });
  await send("v1Responses", "POST", "/v1/responses", { token: key.key, want: 200, body: { model, input: "Stream", stream: true } });
  const input = [{ role: "user", content: "Weather in Paris?" }];
  const first = (await send("v1Responses", "POST", "/v1/responses", { token: key.key, want: 200, body: { model, input, tools: [fn] } })).json;
  const call = first?.output?.find((o) => o.type === "function_call");
  await send("v1Responses", "POST", "/v1/responses", { token: key.key, want: 200,
    body: { model, tools: [fn], input: [...input, ...(first?.output ?? []), { type: "function_call_output", call_id: call?.call_id, output: "sunny" }] } });
}
await send("v1Responses", "POST", "/v1/responses", { token: key.key, want: 200, body: { model: "openai/gpt-4o-mini", input: "JSON",
  text: { format: { type: "json_schema", name: "thing", schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } } } } });
await send("v1Responses", "POST", "/v1/responses", { token: key.key, want: 400, body: { model: "openai/gpt-4o-mini", input: "And then?", previous_response_id: "resp_1" } });
await send("v1Responses", "POST", "/v1/responses", { token: key.key, want: 400, valid: false, body: { model: "openai/gpt-4o-mini" } });
await send("v1Responses", "POST", "/v1/responses", { token: "sk-app-" + "0".repeat(43), want: 401, body: { model: "openai/gpt-4o-mini", input: "hi" } });
const models = (await send("v1Models", "GET", "/v1/models", { token: key.key, want: 200 })).json;
const first = models?.data?.[0]?.id ?? "openai/gpt-4o-mini";
await send("v1Model", "GET", `/v1/models/${first}`, { token: tok, want: 200 });
await send("v1Model", "GET", "/v1/models/openai/ft%2Fno-such-model", { token: key.key, want: 404 });
await send("v1ModelById", "GET", `/v1/models/${encodeURIComponent(first)}`, { token: key.key, want: 200 });

await send("keyRevoke", "DELETE", `/api/keys/${key2.id}`, { token: tok, want: 204 });
await send("keyRevoke", "DELETE", `/api/keys/${key2.id}`, { token: tok, want: 404 });

// Storage: the server's own embedded store, then a host it may not reach.
const db = "backend";
await send("mongoTest", "POST", "/api/storage/mongodb/test", { token: tok, body: { connectionString: mongoURI, database: db }, want: 200 });
await send("mongoTest", "POST", "/api/storage/mongodb/test", { token: tok, body: { connectionString: "mongodb://10.0.0.1:27017/", database: db }, want: 403 });
await send("mongoQuery", "POST", "/api/storage/mongodb/query", { token: tok, body: { connectionString: mongoURI, database: db, collection: "users", filter: {}, limit: 2 }, want: 200 });
await send("mongoQuery", "POST", "/api/storage/mongodb/query", { token: tok, body: { connectionString: mongoURI, database: db, collection: "users", limit: 0 }, want: 400, valid: false });

// Templates: CRUD, then the admin routes.
const base = "/api/spaces/65f000000000000000000001/properties";
const tpl = { id: "prism-colour", name: "Colour picker", widgetType: "color", properties: [{ key: "default", type: "string", value: "#ff0000" }] };
await send("templateCreate", "POST", `${base}/templates`, { token: tok, body: tpl, want: 201 });
await send("templateCreate", "POST", `${base}/templates`, { token: tok, body: tpl, want: 409 });
await send("templatesList", "GET", `${base}/templates?widgetType=color`, { token: tok, want: 200 });
await send("templateGet", "GET", `${base}/templates/prism-colour`, { token: tok, want: 200 });
await send("templateForWidget", "GET", `${base}/templates/widget/color`, { token: tok, want: 200 });
await send("templateUpdate", "PUT", `${base}/templates/prism-colour`, { token: tok, body: { name: "Colour picker v2", widgetType: "color", properties: [], description: "v2" }, want: 200 });
await send("templateDelete", "DELETE", `${base}/templates/prism-colour`, { token: tok, want: 200 });
await send("templateGet", "GET", `${base}/templates/prism-colour`, { token: tok, want: 404 });
await send("templatesMigrate", "POST", `${base}/migrate-templates-to-core`, { token: tok, want: 403 });
await send("templatesMigrate", "POST", `${base}/migrate-templates-to-core?dryRun=true`, { token: admin, want: 200 });
await send("templatesCleanup", "DELETE", `${base}/cleanup-space-templates?dryRun=true`, { token: admin });

// Every operation called, and answered with a 2xx at least once (but the cleanup, which answers
// 404 for a space without templates of its own, and this traffic cannot give a space any).
for (const [path, item] of Object.entries(spec?.paths ?? {})) {
  for (const [method, op] of Object.entries(item)) {
    if (!op?.operationId) continue;
    const statuses = called.get(op.operationId);
    if (!statuses) {
      failures.push(`${op.operationId} (${method.toUpperCase()} ${path}) was never called`);
    } else if (!statuses.some((s) => s < 300) && op.operationId !== "templatesCleanup") {
      failures.push(`${op.operationId} (${method.toUpperCase()} ${path}) never answered a 2xx: ${statuses}`);
    }
  }
}

if (failures.length > 0) {
  console.error(`openapi-proxy: ${failures.length} difference(s) in ${exchanges} exchanges:`);
  for (const f of failures) console.error("  " + f);
  process.exit(1);
}
console.log(`openapi-proxy: ${exchanges} exchanges over ${called.size} operations, no violation`);
