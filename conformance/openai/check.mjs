// OpenAI-compatible conformance with the official `openai` npm client (v6): models, whole and
// streamed chat completions (every chunk's shape, one id, one finish_reason from the API's
// enum, the usage chunk), the Responses API (`responses.create`, streamed and not, and the
// SDK's own accumulator `responses.stream`, which throws on an event that does not fit the
// response it builds), and the client's error classes for the gateway's error answers.
//
// OPENAI_URL is the base URL without /v1, OPENAI_KEY the key, OPENAI_MODEL the model. With
// TARGET_IS_SUPERPI=1 the checks that need superpi's mock model run too, and OPENAI_AUTH_URL /
// OPENAI_AUTH_KEY name a second gateway that requires a token.

import assert from "node:assert/strict";
import OpenAI from "openai";
import { check, done, isSuperpi, need, skip } from "../lib/report.mjs";

const base = need("OPENAI_URL");
const model = process.env.OPENAI_MODEL || "superpi-code";
const superpi = isSuperpi();
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: process.env.OPENAI_KEY || "local", maxRetries: 0, timeout: 60_000 });
// The API reference's finish_reason values.
const FINISH = ["stop", "length", "tool_calls", "content_filter", "function_call"];

/** Streams a completion; returns its chunks and what they add up to. */
async function stream(body, options) {
  const s = await client.chat.completions.create({ model, stream: true, stream_options: { include_usage: true }, ...body }, options);
  const chunks = [];
  let content = "";
  let reasoning = "";
  const finishes = [];
  let toolCalls = 0;
  for await (const chunk of s) {
    chunks.push(chunk);
    for (const choice of chunk.choices) {
      content += choice.delta?.content ?? "";
      reasoning += choice.delta?.reasoning_content ?? "";
      toolCalls += choice.delta?.tool_calls?.length ?? 0;
      if (choice.finish_reason) finishes.push(choice.finish_reason);
    }
  }
  return { chunks, content, reasoning, finishes, toolCalls };
}

function assertChunks({ chunks, finishes }) {
  assert.ok(chunks.length >= 2, `${chunks.length} chunks`);
  for (const c of chunks) {
    assert.equal(c.object, "chat.completion.chunk", JSON.stringify(c));
    assert.equal(typeof c.created, "number");
    assert.equal(typeof c.model, "string");
    assert.ok(Array.isArray(c.choices));
  }
  assert.equal(new Set(chunks.map((c) => c.id)).size, 1, "more than one id across the chunks");
  assert.equal(chunks[0].choices[0]?.delta?.role, "assistant", "the first chunk has no delta.role assistant");
  assert.equal(finishes.length, 1, `finish_reasons: ${JSON.stringify(finishes)}`);
  assert.ok(FINISH.includes(finishes[0]), `finish_reason ${JSON.stringify(finishes[0])} is not one of ${FINISH.join(", ")}`);
  const usage = chunks.filter((c) => c.usage);
  assert.equal(usage.length, 1, `${usage.length} usage chunks with include_usage`);
  assert.deepEqual(usage[0].choices, [], "the usage chunk has choices");
  assert.equal(usage[0], chunks.at(-1), "the usage chunk is not last");
  const u = usage[0].usage;
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
}

async function expectError(cls, status, promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof cls, `got ${e?.constructor?.name} (${e?.status}): ${e?.message}`);
    if (status) assert.equal(e.status, status);
    return e;
  }
  assert.fail(`no ${cls.name}`);
}

await check("models.list: a list of models", async () => {
  const page = await client.models.list();
  assert.ok(page.data.length > 0, "no models");
  for (const m of page.data) {
    assert.equal(typeof m.id, "string");
    assert.equal(m.object, "model", JSON.stringify(m));
  }
  if (superpi) assert.ok(page.data.some((m) => m.id === "superpi-code"), "superpi-code is not listed");
});

await check("chat.completions.create: a whole completion", async () => {
  const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hello from openai" }] });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(typeof r.choices[0].message.content, "string");
  assert.ok(FINISH.includes(r.choices[0].finish_reason), r.choices[0].finish_reason);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  if (superpi) assert.equal(r.choices[0].message.content, "hello from openai");
});

await check("stream: chunk shapes, one id, one finish_reason, usage last", async () => {
  const s = await stream({ messages: [{ role: "user", content: "streamed by openai" }] });
  assertChunks(s);
  if (superpi) assert.equal(s.content, "streamed by openai");
});

await check("NotFoundError (404) for an unknown model", async () => {
  const e = await expectError(OpenAI.NotFoundError, 404, client.chat.completions.create({ model: "no-such-model-anywhere", messages: [{ role: "user", content: "x" }] }));
  assert.equal(typeof e.error?.message, "string", "no error.message in the body");
});

await check("BadRequestError (400) for a request without messages", async () => {
  await expectError(OpenAI.BadRequestError, 400, client.chat.completions.create({ model, messages: [] }));
});


// ---- The Responses API.

/** The events of a streamed response, checked as a client reads them: `type` and
 * `sequence_number` (0, 1, ...) on each, `response.created` and `response.in_progress` first,
 * items added and done one at a time in output order, every delta inside its item, the text of
 * each item's deltas equal to its `.done` text and its final item, one end event last. */
async function responseEvents(body, options) {
  const s = await client.responses.create({ model, stream: true, ...body }, options);
  const events = [];
  for await (const e of s) events.push(e);
  assert.ok(events.length >= 3, `${events.length} events`);
  events.forEach((e, n) => {
    assert.equal(typeof e.type, "string", JSON.stringify(e));
    assert.equal(e.sequence_number, n, `sequence_number of event ${n}: ${JSON.stringify(e)}`);
  });
  assert.deepEqual(events.slice(0, 2).map((e) => e.type), ["response.created", "response.in_progress"]);
  const ENDS = ["response.completed", "response.incomplete", "response.failed"];
  const end = events.at(-1);
  assert.ok(ENDS.includes(end.type), `last event ${end.type}`);
  assert.ok(events.slice(0, -1).every((e) => !ENDS.includes(e.type)), "an end event before the last");
  const id = events[0].response.id;
  for (const e of events) if (e.response) assert.equal(e.response.id, id, "more than one response id");
  let open = null;
  let index = 0;
  for (const e of events) {
    switch (e.type) {
      case "response.output_item.added":
        assert.equal(open, null, "an item added while another is open");
        assert.equal(e.output_index, index);
        open = { id: e.item.id, type: e.item.type, text: "" };
        break;
      case "response.output_text.delta":
      case "response.reasoning_summary_text.delta":
        assert.ok(open && open.id === e.item_id && e.output_index === index, `a delta outside its item: ${JSON.stringify(e)}`);
        open.text += e.delta;
        break;
      case "response.output_text.done":
      case "response.reasoning_summary_text.done":
        assert.equal(e.text, open?.text, "a .done text is not the deltas'");
        break;
      case "response.output_item.done": {
        assert.ok(open && open.id === e.item.id && e.output_index === index, `done for an item not open: ${JSON.stringify(e)}`);
        const text = e.item.type === "message" ? e.item.content.map((c) => c.text).join("") : e.item.summary.map((p) => p.text).join("");
        assert.equal(text, open.text, "an item's text is not its deltas'");
        assert.deepEqual(end.response.output[index], e.item, "the final response's item differs from its output_item.done");
        open = null;
        index += 1;
        break;
      }
    }
  }
  assert.equal(open, null, "an item left open");
  assert.equal(end.response.output.length, index);
  return { events, end: end.response, kinds: events.map((e) => e.type) };
}

const messageText = (response) =>
  response.output.filter((i) => i.type === "message").flatMap((i) => i.content).map((c) => c.text).join("");
const summaryText = (response) =>
  response.output.filter((i) => i.type === "reasoning").flatMap((i) => i.summary).map((p) => p.text).join("");

function assertUsage(response) {
  const u = response.usage;
  assert.ok(u, "no usage");
  assert.equal(u.total_tokens, u.input_tokens + u.output_tokens);
  assert.equal(typeof u.input_tokens_details?.cached_tokens, "number", "no input_tokens_details.cached_tokens");
  assert.equal(typeof u.output_tokens_details?.reasoning_tokens, "number", "no output_tokens_details.reasoning_tokens");
}

await check("responses.create: a whole response", async () => {
  const r = await client.responses.create({ model, input: "hello from responses" });
  assert.equal(r.object, "response");
  assert.equal(r.status, "completed");
  assert.match(r.id, /^resp_/);
  assert.ok(r.output.some((i) => i.type === "message" && i.role === "assistant"), JSON.stringify(r.output));
  assertUsage(r);
  if (superpi) assert.equal(r.output_text, "hello from responses");
});

await check("responses.create stream: event shapes and order, sequence numbers, one id, response.completed last with usage", async () => {
  const { end, kinds } = await responseEvents({ input: "streamed by responses" });
  assert.equal(kinds.at(-1), "response.completed");
  for (const k of ["response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done"]) {
    assert.ok(kinds.includes(k), `no ${k}: ${kinds.join(", ")}`);
  }
  assert.equal(end.status, "completed");
  assertUsage(end);
  if (superpi) assert.equal(messageText(end), "streamed by responses");
});

await check("responses.stream: the SDK's accumulator takes every event; finalResponse", async () => {
  const prompt = superpi ? '@think pondering\n@tool ls {"path": "."}' : "accumulated by the sdk";
  const s = client.responses.stream({ model, input: prompt });
  let deltas = "";
  s.on("response.output_text.delta", (e) => (deltas += e.delta));
  const r = await s.finalResponse();
  assert.equal(r.status, "completed");
  assert.equal(r.output_text, deltas, "output_text is not the text deltas'");
  if (superpi) {
    assert.match(summaryText(r), /pondering/);
    assert.match(summaryText(r), /\[tool\] ls/);
    assert.match(r.output_text, /hello\.txt/, "the agent's ls did not run in its workspace");
  }
});

await check("responses: BadRequestError (400) for an unknown previous_response_id", async () => {
  const e = await expectError(OpenAI.BadRequestError, 400, client.responses.create({ model, input: "x", previous_response_id: "resp_no_such_response" }));
  assert.equal(e.code, "previous_response_not_found");
  assert.equal(e.param, "previous_response_id");
});

const RESPONSES_MOCK = ["responses: previous_response_id continues the conversation", "responses: client tools are ignored, no function_call reaches the client", "responses: a function_call_output is refused (BadRequestError 400, param input[1])", "responses: a failed turn, streamed: response.failed with the error", "responses: a failed turn, whole: InternalServerError 500, not retried", "responses: an aborted stream cancels the turn"];

if (!superpi) {
  for (const name of [...RESPONSES_MOCK, "stream: reasoning_content and server-side tools", "an OpenCode-shaped request (own tools, tool_choice, max_tokens, x-session-id) is answered by the agent", "a failed turn, streamed: an error object, then the end (APIError)", "a failed turn, whole: InternalServerError 500 in the error shape, not retried", "sessions: x-session-id continues one conversation", "AuthenticationError (401) for a wrong key", "PermissionDeniedError (403) for a foreign browser Origin", "APIError 413 for a body over the limit", "an aborted stream cancels the turn"]) {
    skip(name, "needs superpi's mock model");
  }
  done();
}

await check("stream: reasoning_content and server-side tools", async () => {
  const s = await stream({ messages: [{ role: "user", content: '@think pondering\n@tool ls {"path": "."}' }] });
  assertChunks(s);
  assert.match(s.reasoning, /pondering/);
  assert.match(s.reasoning, /\[tool\] ls/);
  assert.equal(s.toolCalls, 0, "tool_calls sent to the client");
  assert.ok(s.content.length > 0, "no answer text");
});

await check("an OpenCode-shaped request (own tools, tool_choice, max_tokens, x-session-id) is answered by the agent", async () => {
  const s = await stream(
    {
      messages: [
        { role: "system", content: "You are a coding agent." },
        { role: "user", content: "agent answers" },
      ],
      tools: [{ type: "function", function: { name: "bash", description: "run", parameters: { type: "object", properties: { command: { type: "string" } } } } }],
      tool_choice: "auto",
      max_tokens: 32000,
      temperature: 0,
    },
    { headers: { "x-session-id": `conformance-opencode-${Date.now()}` } },
  );
  assertChunks(s);
  assert.equal(s.toolCalls, 0, "tool_calls sent to the client");
  assert.match(s.content, /agent answers/);
});

await check("a failed turn, streamed: an error object, then the end (APIError)", async () => {
  const seen = [];
  const s = await client.chat.completions.create({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "@fail the model broke" }] });
  const e = await (async () => {
    try {
      for await (const chunk of s) seen.push(chunk);
    } catch (e) {
      return e;
    }
    assert.fail(`the stream ended without an error after ${seen.length} chunks`);
  })();
  assert.ok(e instanceof OpenAI.APIError, `got ${e?.constructor?.name}: ${e?.message}`);
  assert.match(e.message, /the model broke/);
  assert.equal(e.type, "server_error");
  assert.ok(seen.length >= 1 && seen[0].choices[0]?.delta?.role === "assistant", "no role chunk before the error");
  for (const c of seen) {
    assert.equal(c.object, "chat.completion.chunk", JSON.stringify(c));
    for (const ch of c.choices) assert.equal(ch.finish_reason, null, `finish_reason ${ch.finish_reason} before the error`);
  }
});

await check("a failed turn, whole: InternalServerError 500 in the error shape, not retried", async () => {
  const e = await expectError(OpenAI.InternalServerError, 500, client.chat.completions.create({ model, messages: [{ role: "user", content: "@fail the model broke" }] }));
  assert.match(e.message, /the model broke/);
  assert.equal(e.code, "turn_failed");
  assert.equal(e.headers.get("x-should-retry"), "false");
});

await check("sessions: x-session-id continues one conversation", async () => {
  const headers = { "x-session-id": `conformance-${Date.now()}` };
  const one = await client.chat.completions.create({ model, messages: [{ role: "user", content: "one" }] }, { headers }).withResponse();
  const two = await client.chat.completions.create({ model, messages: [{ role: "user", content: "two" }] }, { headers }).withResponse();
  const id = (r) => r.response.headers.get("x-superpi-conversation-id");
  assert.ok(id(one), "no x-superpi-conversation-id header");
  assert.equal(id(one), id(two));
  assert.equal(two.data.choices[0].message.content, "two");
});

await check("AuthenticationError (401) for a wrong key", async () => {
  const url = need("OPENAI_AUTH_URL");
  const wrong = new OpenAI({ baseURL: `${url}/v1`, apiKey: "not-the-key", maxRetries: 0 });
  await expectError(OpenAI.AuthenticationError, 401, wrong.chat.completions.create({ model, messages: [{ role: "user", content: "x" }] }));
  const right = new OpenAI({ baseURL: `${url}/v1`, apiKey: need("OPENAI_AUTH_KEY"), maxRetries: 0 });
  const r = await right.chat.completions.create({ model, messages: [{ role: "user", content: "with the key" }] });
  assert.equal(r.choices[0].message.content, "with the key");
});

await check("PermissionDeniedError (403) for a foreign browser Origin", async () => {
  const browser = new OpenAI({ baseURL: `${base}/v1`, apiKey: "local", maxRetries: 0, defaultHeaders: { Origin: "https://attacker.example" } });
  await expectError(OpenAI.PermissionDeniedError, 403, browser.chat.completions.create({ model, messages: [{ role: "user", content: "x" }] }));
});

await check("APIError 413 for a body over the limit", async () => {
  const big = "x".repeat(9 * 1024 * 1024);
  await expectError(OpenAI.APIError, 413, client.chat.completions.create({ model, messages: [{ role: "user", content: big }] }));
});

await check("an aborted stream cancels the turn", async () => {
  const headers = { "x-session-id": `conformance-abort-${Date.now()}` };
  const controller = new AbortController();
  // 200 deltas 50 ms apart: about ten seconds if nothing cancels the turn.
  const s = await client.chat.completions.create(
    { model, stream: true, messages: [{ role: "user", content: "@slow 50\n@deltas 200" }] },
    { signal: controller.signal, headers },
  );
  let got = 0;
  for await (const _ of s) {
    if (++got === 3) {
      controller.abort();
      break;
    }
  }
  assert.equal(got, 3);
  // The next request of the session waits behind the first turn unless it was cancelled.
  const started = Date.now();
  const next = await client.chat.completions.create({ model, messages: [{ role: "user", content: "after the abort" }] }, { headers });
  assert.equal(next.choices[0].message.content, "after the abort");
  assert.ok(Date.now() - started < 5000, `the next turn waited ${Date.now() - started} ms: the aborted turn ran on`);
});

await check(RESPONSES_MOCK[0], async () => {
  const one = await client.responses.create({ model, instructions: "be brief", input: "my name is Ada" }).withResponse();
  const two = await client.responses.create({ model, previous_response_id: one.data.id, input: [{ role: "user", content: [{ type: "input_text", text: "and again" }] }] }).withResponse();
  const id = (r) => r.response.headers.get("x-superpi-conversation-id");
  assert.ok(id(one), "no x-superpi-conversation-id header");
  assert.equal(id(two), id(one), "another conversation");
  assert.equal(two.data.previous_response_id, one.data.id);
  assert.equal(two.data.output_text, "and again", "the continued conversation got more than the new input");
  const three = await responseEvents({ previous_response_id: two.data.id, input: "third" });
  assert.equal(messageText(three.end), "third");
});

await check(RESPONSES_MOCK[1], async () => {
  const { events, end } = await responseEvents({
    input: "agent answers",
    instructions: "You are a coding agent.",
    tools: [{ type: "function", name: "shell", description: "run", parameters: { type: "object", properties: { command: { type: "string" } } }, strict: false }],
    tool_choice: "auto",
    parallel_tool_calls: true,
    reasoning: { summary: "auto" },
    include: ["reasoning.encrypted_content"],
    store: false,
  });
  assert.ok(events.every((e) => !e.type.startsWith("response.function_call") && e.item?.type !== "function_call"), "a function call reached the client");
  assert.match(messageText(end), /agent answers/);
});

await check(RESPONSES_MOCK[2], async () => {
  const input = [{ role: "user", content: "x" }, { type: "function_call_output", call_id: "call_1", output: "42" }];
  const e = await expectError(OpenAI.BadRequestError, 400, client.responses.create({ model, input }));
  assert.equal(e.param, "input[1]");
  assert.match(e.message, /function_call_output/);
});

await check(RESPONSES_MOCK[3], async () => {
  const { end, kinds } = await responseEvents({ input: "@fail the model broke" });
  assert.equal(kinds.at(-1), "response.failed");
  assert.equal(end.status, "failed");
  assert.equal(end.error?.code, "server_error");
  assert.match(end.error?.message ?? "", /the model broke/);
});

await check(RESPONSES_MOCK[4], async () => {
  const e = await expectError(OpenAI.InternalServerError, 500, client.responses.create({ model, input: "@fail the model broke" }));
  assert.match(e.message, /the model broke/);
  assert.equal(e.code, "turn_failed");
  assert.equal(e.headers.get("x-should-retry"), "false");
});

await check(RESPONSES_MOCK[5], async () => {
  const headers = { "x-session-id": `conformance-responses-abort-${Date.now()}` };
  const controller = new AbortController();
  const s = await client.responses.create({ model, stream: true, input: "@slow 50\n@deltas 200" }, { signal: controller.signal, headers });
  let got = 0;
  for await (const e of s) {
    if (e.type === "response.output_text.delta" && ++got === 3) {
      controller.abort();
      break;
    }
  }
  assert.equal(got, 3);
  const started = Date.now();
  const next = await client.responses.create({ model, input: "after the abort" }, { headers });
  assert.equal(next.output_text, "after the abort");
  assert.ok(Date.now() - started < 5000, `the next turn waited ${Date.now() - started} ms: the aborted turn ran on`);
});

done();
