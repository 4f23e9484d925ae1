// OpenAI-compatible conformance with the official `openai` npm client (v6): models, whole and
// streamed chat completions (every chunk's shape, one id, one finish_reason from the API's
// enum, the usage chunk), and the client's error classes for the gateway's error answers.
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

if (!superpi) {
  for (const name of ["stream: reasoning_content and server-side tools", "an OpenCode-shaped request (own tools, tool_choice, max_tokens, x-session-id) is answered by the agent", "a failed turn, streamed: an error object, then the end (APIError)", "a failed turn, whole: InternalServerError 500 in the error shape, not retried", "sessions: x-session-id continues one conversation", "AuthenticationError (401) for a wrong key", "PermissionDeniedError (403) for a foreign browser Origin", "APIError 413 for a body over the limit", "an aborted stream cancels the turn"]) {
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

done();
