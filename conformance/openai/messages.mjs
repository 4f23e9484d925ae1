// Anthropic Messages conformance of the gateway's POST /v1/messages with the official
// `@anthropic-ai/sdk` npm client (v1): a whole message, a raw event stream checked against the
// API's grammar, the MessageStream helper (thinking and text blocks), server-side tools, a
// failed turn both ways, a continued session, count_tokens, models.list, the client's error
// classes for the gateway's refusals, and structured output through messages.parse.
//
// Reads OPENAI_URL (the gateway, without /v1), TARGET_IS_SUPERPI and OPENAI_AUTH_URL /
// OPENAI_AUTH_KEY (a second gateway that requires a token) like check.mjs. The checks need
// superpi's gateway and its mock model: against another target they show as skip.

import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { jsonSchemaOutputFormat } from "@anthropic-ai/sdk/helpers/json-schema";
import { check, done, isSuperpi, need, skip } from "../lib/report.mjs";

const CHECKS = [
  "anthropic: messages.create, a whole message",
  "anthropic: a raw stream follows the event grammar",
  "anthropic: messages.stream, thinking then text blocks",
  "anthropic: server-side tools, the answer as text (no tool_use)",
  "anthropic: a failed turn, streamed: APIError from the error event",
  "anthropic: a failed turn, whole: InternalServerError 500, not retried",
  "anthropic: a full-history session continues one conversation",
  "anthropic: countTokens",
  "anthropic: models.list",
  "anthropic: BadRequestError (400) for a request without max_tokens",
  "anthropic: AuthenticationError (401) for a wrong key; x-api-key and a bearer token let in",
  "anthropic: PermissionDeniedError (403) for a foreign browser Origin",
  "anthropic: an aborted stream cancels the turn",
  "anthropic: messages.parse with output_config.format: the checked JSON as parsed_output",
];

const base = need("OPENAI_URL");
if (!isSuperpi()) {
  for (const name of CHECKS) skip(name, "needs superpi's gateway and its mock model");
  done();
}

const model = "claude-sonnet-4-5";
const client = new Anthropic({ baseURL: base, apiKey: "local", maxRetries: 0, timeout: 60_000 });
const STOP = ["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"];
const user = (text) => [{ role: "user", content: text }];

async function expectError(cls, status, promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof cls, `got ${e?.constructor?.name} (${e?.status}): ${e?.message}`);
    if (status) assert.equal(e.status, status);
    assert.equal(e.error?.type, "error", `not Anthropic's error shape: ${JSON.stringify(e.error)}`);
    assert.equal(typeof e.error?.error?.message, "string");
    return e;
  }
  assert.fail(`no ${cls.name}`);
}

function assertMessage(m) {
  assert.equal(m.type, "message", JSON.stringify(m));
  assert.equal(m.role, "assistant");
  assert.match(m.id, /^msg_/);
  assert.ok(Array.isArray(m.content));
  assert.ok(STOP.includes(m.stop_reason), `stop_reason ${m.stop_reason}`);
  assert.equal(typeof m.usage.input_tokens, "number");
  assert.equal(typeof m.usage.output_tokens, "number");
}

const textOf = (m) => m.content.filter((b) => b.type === "text").map((b) => b.text).join("");

await check(CHECKS[0], async () => {
  const m = await client.messages.create({ model, max_tokens: 1024, messages: user("hello from anthropic") });
  assertMessage(m);
  assert.equal(m.model, model, "the model is echoed");
  assert.deepEqual(m.content, [{ type: "text", text: "hello from anthropic" }]);
  assert.equal(m.stop_reason, "end_turn");
  assert.ok(m.usage.output_tokens > 0);
});

await check(CHECKS[1], async () => {
  const s = await client.messages.create({ model, max_tokens: 1024, stream: true, messages: user("streamed by anthropic") });
  const events = [];
  for await (const e of s) events.push(e);
  assert.equal(events[0].type, "message_start");
  assert.equal(events.at(-1).type, "message_stop");
  assert.equal(events.at(-2).type, "message_delta");
  assert.ok(STOP.includes(events.at(-2).delta.stop_reason));
  let open = null;
  let next = 0;
  let text = "";
  for (const e of events.slice(1, -2)) {
    if (e.type === "content_block_start") {
      assert.equal(open, null, "a block started inside another");
      assert.equal(e.index, next++, "blocks numbered in order");
      open = e;
    } else if (e.type === "content_block_delta") {
      assert.equal(e.index, open?.index, "a delta outside its block");
      if (e.delta.type === "text_delta") text += e.delta.text;
    } else if (e.type === "content_block_stop") {
      assert.equal(e.index, open?.index);
      open = null;
    } else assert.fail(`unexpected ${e.type} between message_start and message_delta`);
  }
  assert.equal(open, null, "a block never stopped");
  assert.equal(text, "streamed by anthropic");
});

await check(CHECKS[2], async () => {
  const stream = client.messages.stream({
    model,
    max_tokens: 4096,
    thinking: { type: "enabled", budget_tokens: 2048 },
    messages: user("@think pondering it\nfour words of text"),
  });
  let streamed = "";
  stream.on("text", (t) => (streamed += t));
  const m = await stream.finalMessage();
  assertMessage(m);
  assert.equal(m.content[0].type, "thinking", JSON.stringify(m.content));
  assert.match(m.content[0].thinking, /pondering it/);
  assert.equal(m.content.at(-1).type, "text");
  assert.equal(textOf(m), "four words of text");
  assert.equal(streamed, "four words of text");
});

await check(CHECKS[3], async () => {
  const m = await client.messages.create({
    model,
    max_tokens: 4096,
    thinking: { type: "adaptive" },
    tools: [{ name: "bash", description: "run", input_schema: { type: "object", properties: { command: { type: "string" } } } }],
    tool_choice: { type: "auto" },
    messages: user('@tool ls {"path": "."}'),
  });
  assertMessage(m);
  assert.ok(!m.content.some((b) => b.type === "tool_use"), "tool_use sent to the client");
  assert.equal(m.stop_reason, "end_turn");
  assert.ok(m.content.some((b) => b.type === "thinking" && /\[tool\] ls/.test(b.thinking)), JSON.stringify(m.content));
  assert.match(textOf(m), /hello\.txt/);
});

await check(CHECKS[4], async () => {
  const s = await client.messages.create({ model, max_tokens: 1024, stream: true, messages: user("@fail the model broke") });
  const seen = [];
  const e = await (async () => {
    try {
      for await (const event of s) seen.push(event);
    } catch (e) {
      return e;
    }
    assert.fail(`the stream ended without an error after ${seen.length} events`);
  })();
  assert.ok(e instanceof Anthropic.APIError, `got ${e?.constructor?.name}: ${e?.message}`);
  assert.match(e.message, /the model broke/);
  assert.equal(e.type, "api_error");
  assert.equal(seen[0]?.type, "message_start");
  assert.ok(!seen.some((event) => event.type === "message_delta"), "a message_delta before the error");
});

await check(CHECKS[5], async () => {
  const e = await expectError(Anthropic.InternalServerError, 500, client.messages.create({ model, max_tokens: 1024, messages: user("@fail the model broke") }));
  assert.match(e.message, /the model broke/);
  assert.equal(e.type, "api_error");
  assert.equal(e.headers.get("x-should-retry"), "false");
});

await check(CHECKS[6], async () => {
  // Claude Code's way: its session id in a header, the whole history every time.
  const headers = { "x-claude-code-session-id": `conformance-${Date.now()}` };
  const system = "You are a coding agent.";
  const history = [{ role: "user", content: "first prompt" }];
  const one = await client.messages.create({ model, max_tokens: 1024, system, messages: history }, { headers }).withResponse();
  history.push({ role: "assistant", content: one.data.content }, { role: "user", content: "second prompt" });
  const two = await client.messages.create({ model, max_tokens: 1024, system, messages: history }, { headers }).withResponse();
  const id = (r) => r.response.headers.get("x-superpi-conversation-id");
  assert.ok(id(one), "no x-superpi-conversation-id header");
  assert.equal(id(one), id(two));
  assert.equal(textOf(two.data), "second prompt", "the second request answered more than its last prompt");
});

await check(CHECKS[7], async () => {
  const small = await client.messages.countTokens({ model, messages: user("a few words") });
  const big = await client.messages.countTokens({ model, system: "x".repeat(3000), messages: user("a few words") });
  assert.equal(typeof small.input_tokens, "number");
  assert.ok(small.input_tokens > 0 && big.input_tokens > small.input_tokens + 900, `${small.input_tokens} ${big.input_tokens}`);
});

await check(CHECKS[8], async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert.equal(m.type, "model", JSON.stringify(m));
    assert.equal(typeof m.display_name, "string");
    ids.push(m.id);
  }
  assert.ok(ids.includes("superpi-code"), `superpi-code is not listed: ${ids}`);
});

await check(CHECKS[9], async () => {
  const e = await expectError(Anthropic.BadRequestError, 400, client.messages.create({ model, messages: user("x") }));
  assert.equal(e.type, "invalid_request_error");
  assert.match(e.message, /max_tokens/);
});

await check(CHECKS[10], async () => {
  const url = need("OPENAI_AUTH_URL");
  const key = need("OPENAI_AUTH_KEY");
  const wrong = new Anthropic({ baseURL: url, apiKey: "not-the-key", maxRetries: 0 });
  const e = await expectError(Anthropic.AuthenticationError, 401, wrong.messages.create({ model, max_tokens: 16, messages: user("x") }));
  assert.equal(e.type, "authentication_error");
  for (const options of [{ apiKey: key }, { apiKey: null, authToken: key }]) {
    const right = new Anthropic({ baseURL: url, maxRetries: 0, ...options });
    const m = await right.messages.create({ model, max_tokens: 16, messages: user("with the key") });
    assert.equal(textOf(m), "with the key", JSON.stringify(options));
  }
});

await check(CHECKS[11], async () => {
  const browser = new Anthropic({ baseURL: base, apiKey: "local", maxRetries: 0, defaultHeaders: { Origin: "https://attacker.example" } });
  const e = await expectError(Anthropic.PermissionDeniedError, 403, browser.messages.create({ model, max_tokens: 16, messages: user("x") }));
  assert.equal(e.type, "permission_error");
});

await check(CHECKS[12], async () => {
  const headers = { "x-session-id": `conformance-anthropic-abort-${Date.now()}` };
  const controller = new AbortController();
  // 200 deltas 50 ms apart: about ten seconds if nothing cancels the turn.
  const s = await client.messages.create(
    { model, max_tokens: 1024, stream: true, messages: user("@slow 50\n@deltas 200") },
    { signal: controller.signal, headers },
  );
  let deltas = 0;
  for await (const event of s) {
    if (event.type === "content_block_delta" && ++deltas === 3) {
      controller.abort();
      break;
    }
  }
  assert.equal(deltas, 3);
  // The next request of the session waits behind the first turn unless it was cancelled.
  const started = Date.now();
  const next = await client.messages.create({ model, max_tokens: 16, messages: user("after the abort") }, { headers });
  assert.equal(textOf(next), "after the abort");
  assert.ok(Date.now() - started < 5000, `the next turn waited ${Date.now() - started} ms: the aborted turn ran on`);
});

await check(CHECKS[13], async () => {
  const format = jsonSchemaOutputFormat({
    type: "object",
    properties: { n: { type: "integer" } },
    required: ["n"],
    additionalProperties: false,
  });
  // The mock's first answer breaks the schema: the kernel tells it so, the second is kept.
  const m = await client.messages.parse({
    model,
    max_tokens: 1024,
    messages: user('@answer three\n@answer {"n": 8}'),
    output_config: { format },
  });
  assertMessage(m);
  assert.deepEqual(m.parsed_output, { n: 8 }, JSON.stringify(m.content));
});

done();
