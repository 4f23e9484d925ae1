// Conformance of `superpi agui` with the official AG-UI client.
//
// Starts `superpi agui --port 0` in private directories (mock model), then drives it with
// @ag-ui/client's HttpAgent, whose pipeline validates every event against @ag-ui/core's
// schemas and runs the client's order verifier; each event is also parsed with EventSchema
// here. Any violation fails the run with a non-zero exit.
//
//   npm ci && node check.mjs [path/to/superpi]      (default: ../../target/debug/superpi)

import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { createInterface } from "node:readline";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

process.env.SUPPRESS_TRANSFORMATION_WARNINGS ??= "true";
const here = dirname(fileURLToPath(import.meta.url));
const bin = resolve(process.argv[2] ?? join(here, "../../target/debug/superpi"));

const root = mkdtempSync(join(tmpdir(), "superpi-agui-conformance-"));
const dirs = { data: join(root, "data"), config: join(root, "config"), run: join(root, "run"), ws: join(root, "ws") };
for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
writeFileSync(join(dirs.ws, "hello.txt"), "hi\n");
const env = {
  ...process.env,
  SUPERPI_DATA_DIR: dirs.data,
  SUPERPI_CONFIG_DIR: dirs.config,
  SUPERPI_RUNTIME_DIR: dirs.run,
  HOME: root,
};
delete env.SUPERPI_GATEWAY_TOKEN;

const server = spawn(bin, ["agui", "--port", "0"], { env, cwd: dirs.ws, stdio: ["ignore", "pipe", "inherit"] });
const base = await new Promise((ok, fail) => {
  server.on("error", fail);
  server.on("exit", (code) => fail(new Error(`superpi agui exited (${code}) before listening`)));
  createInterface({ input: server.stdout }).once("line", (line) => ok(line.trim().split(" ").pop()));
});

/** One run through HttpAgent; returns the agent, its events and the outcome. */
async function run(agent, prompt, forwardedProps = {}) {
  agent.addMessage({ id: randomUUID(), role: "user", content: prompt });
  const events = [];
  let error;
  try {
    await agent.runAgent({ runId: randomUUID(), forwardedProps }, { onEvent: ({ event }) => void events.push(event) });
  } catch (e) {
    error = e;
  }
  for (const event of events) EventSchema.parse(event);
  return { events, error };
}

const types = (events) => events.map((e) => e.type);
const results = [];
async function check(name, body) {
  try {
    await body();
    results.push([name, "ok"]);
  } catch (e) {
    results.push([name, `FAILED: ${e.stack ?? e}`]);
  }
}

const newAgent = (threadId) => new HttpAgent({ url: `${base}/agui/v1/run`, threadId });

await check("reasoning and text", async () => {
  const agent = newAgent("conf-text");
  const { events, error } = await run(agent, "@think a short thought\nhello from the mock");
  assert.equal(error, undefined);
  assert.deepEqual(types(events).slice(0, 2), ["RUN_STARTED", "STATE_SNAPSHOT"]);
  assert.equal(types(events).at(-1), "RUN_FINISHED");
  assert.ok(types(events).includes("REASONING_MESSAGE_CONTENT"));
  const last = agent.messages.at(-1);
  assert.equal(last.role, "assistant");
  assert.equal(last.content, "hello from the mock");
  assert.equal(agent.state.status, "idle");
  assert.ok(agent.state.usage.totalOutputTokens > 0);
});

await check("a tool call and its result", async () => {
  const agent = newAgent("conf-tool");
  const { error } = await run(agent, '@tool ls {"path": "."}');
  assert.equal(error, undefined);
  const roles = agent.messages.map((m) => m.role);
  assert.deepEqual(roles, ["user", "assistant", "tool", "assistant"], JSON.stringify(agent.messages));
  const call = agent.messages[1].toolCalls[0];
  assert.equal(call.function.name, "ls");
  assert.deepEqual(JSON.parse(call.function.arguments), { path: "." });
  assert.equal(agent.messages[2].toolCallId, call.id);
  assert.match(agent.messages[2].content, /hello\.txt/);
});

await check("a second run on the same thread", async () => {
  const agent = newAgent("conf-two");
  await run(agent, "first");
  const { error } = await run(agent, "second");
  assert.equal(error, undefined);
  assert.deepEqual(
    agent.messages.map((m) => [m.role, m.content]),
    [["user", "first"], ["assistant", "first"], ["user", "second"], ["assistant", "second"]],
  );
});

await check("a failed turn is RUN_ERROR", async () => {
  const agent = newAgent("conf-fail");
  const { events } = await run(agent, "@fail the model broke");
  assert.equal(types(events).at(-1), "RUN_ERROR");
  assert.match(events.at(-1).message, /the model broke/);
});

await check("a permission question answered through the input route", async () => {
  const agent = newAgent("conf-ask");
  agent.addMessage({ id: randomUUID(), role: "user", content: '@tool bash {"command": "touch asked.txt"}' });
  const events = [];
  let asked;
  await agent.runAgent({ runId: randomUUID(), forwardedProps: { executionMode: "accept-edits" } }, {
    onEvent: ({ event }) => void events.push(event),
    onCustomEvent: async ({ event }) => {
      if (event.name !== "superpi.permission_request") return;
      asked = event.value;
      assert.equal(agent.state.pendingPermission?.requestId, asked.requestId);
      const res = await fetch(`${base}/agui/v1/sessions/conf-ask/input`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "permission", requestId: asked.requestId, optionId: "allow_once" }),
      });
      assert.equal(res.status, 200);
    },
  });
  for (const event of events) EventSchema.parse(event);
  assert.ok(asked, "the run asked no question (does the kernel's policy ask in accept-edits?)");
  assert.deepEqual(asked.options.map((o) => o.optionId), ["allow_once", "allow_always", "reject_once", "reject_always"]);
  assert.equal(agent.state.pendingPermission, null);
  assert.equal(types(events).at(-1), "RUN_FINISHED");
});

await check("attach: snapshots through the same client pipeline", async () => {
  class Attach extends HttpAgent {
    requestInit() {
      return { method: "GET", headers: { Accept: "text/event-stream" }, signal: this.abortController.signal };
    }
  }
  const agent = new Attach({ url: `${base}/agui/v1/sessions/conf-two/events`, threadId: "conf-two" });
  const events = [];
  await agent.runAgent({}, {
    onEvent: ({ event }) => void events.push(event),
    onRunFinishedEvent: () => agent.abortRun(),
  });
  for (const event of events) EventSchema.parse(event);
  // Aborting the open stream makes the client add a RUN_ERROR of its own after ours.
  const ours = events.slice(0, types(events).indexOf("RUN_FINISHED") + 1);
  assert.deepEqual(types(ours), ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
  assert.deepEqual(agent.messages.map((m) => m.content), ["first", "first", "second", "second"]);
});

server.kill("SIGTERM");
// The kernel the server started outlives it: stop it through its pid file.
try {
  const { readFileSync } = await import("node:fs");
  process.kill(Number(readFileSync(join(dirs.data, "kernel.lock"), "utf8").trim()), "SIGTERM");
} catch {}
rmSync(root, { recursive: true, force: true });

let failed = 0;
for (const [name, outcome] of results) {
  console.log(`${outcome === "ok" ? "ok  " : "FAIL"} ${name}${outcome === "ok" ? "" : `\n${outcome}`}`);
  if (outcome !== "ok") failed++;
}
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
