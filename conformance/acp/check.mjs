// ACP conformance with the official TypeScript SDK (@agentclientprotocol/sdk) as the client:
// initialize, session/new, prompts with text, tool calls and a permission answer, cancel,
// session/load, an unknown method; every message both ways is recorded and validated against
// the SDK's schema/v1/schema.json (see schema.mjs).
//
// ACP_COMMAND is the agent's command line (run with sh -c in its own process group). The checks
// of tool calls, permissions, cancelling and session/load need a model that follows the
// conformance directives (`@tool NAME JSON`, an echo otherwise): superpi's mock model
// (TARGET_IS_SUPERPI=1), or the runner's fake model behind another agent (FAKE_MODEL, with
// ACP_SHELL_TOOL naming that agent's shell tool, its command argument and the arguments with
// which its model asks first, and ACP_ASKING_MODE its mode that asks before a command). Checks
// of superpi's own tools, modes and extensions run against superpi only.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { blocked, check, done, isSuperpi, need, skip, verdict } from "../lib/report.mjs";
import { validateExchange } from "./schema.mjs";

const command = need("ACP_COMMAND");
const cwd = process.env.CONFORMANCE_WORKSPACE || process.cwd();
const superpi = isSuperpi();
const fakeModel = !superpi && Boolean(process.env.FAKE_MODEL);
const directed = superpi || fakeModel;
const shellTool = JSON.parse(process.env.ACP_SHELL_TOOL || '{"name": "bash", "arg": "command"}');
// `ask`: the arguments with which the agent's model asks the user first (Codex's escalation).
const shell = (command, ask = false) => `@tool ${shellTool.name} ${JSON.stringify({ [shellTool.arg]: command, ...(ask ? shellTool.ask : {}) })}`;
const STOP = ["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"];

const log = [];
const agentProc = spawn("sh", ["-c", `exec ${command}`], { cwd, stdio: ["pipe", "pipe", "ignore"], detached: true });
const stopAgent = () => {
  try {
    process.kill(-agentProc.pid, "SIGKILL");
  } catch {}
};
process.on("exit", stopAgent);

// The SDK's own ndjson stream, with a tap recording every message both ways.
const raw = acp.ndJsonStream(Writable.toWeb(agentProc.stdin), Readable.toWeb(agentProc.stdout));
const writer = raw.writable.getWriter();
const stream = {
  writable: new WritableStream({
    write: (msg) => {
      log.push(["out", structuredClone(msg)]);
      return writer.write(msg);
    },
    close: () => writer.close(),
  }),
  readable: raw.readable.pipeThrough(
    new TransformStream({
      transform: (msg, c) => {
        log.push(["in", structuredClone(msg)]);
        c.enqueue(msg);
      },
    }),
  ),
};

// What the client sees: updates per session, and how it answers permission questions.
const updates = new Map();
let permissionAnswer = "allow_once";
const asked = [];
// Forms the agent asked for (`elicitation/create`), each accepted with the last option of
// every field.
const elicited = [];
const app = acp
  .client({ name: "superpi-conformance" })
  .onNotification("session/update", ({ params }) => {
    if (!updates.has(params.sessionId)) updates.set(params.sessionId, []);
    updates.get(params.sessionId).push(params.update);
  })
  .onRequest("session/request_permission", ({ params }) => {
    asked.push(params);
    const option = params.options.find((o) => o.kind === permissionAnswer) ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest("elicitation/create", ({ params }) => {
    elicited.push(params);
    const fields = Object.entries(params.requestedSchema?.properties ?? {});
    return { action: "accept", content: Object.fromEntries(fields.map(([k, f]) => [k, f.enum?.at(-1) ?? ""])) };
  });

const text = (list, kind) =>
  list.filter((u) => u.sessionUpdate === kind && u.content?.type === "text").map((u) => u.content.text).join("");

await app.connectWith(stream, async (ctx) => {
  let init;
  let first;
  await check("initialize: protocol version 1 and capabilities", async () => {
    init = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, elicitation: { form: {} } },
      clientInfo: { name: "superpi-conformance", version: "1.0.0" },
    });
    assert.equal(init.protocolVersion, 1);
    assert.equal(typeof init.agentCapabilities, "object");
  });

  if (!init) {
    blocked("every other check", "initialize failed above");
    return;
  }

  const sessionOk = await check("session/new", async () => {
    const r = await ctx.request("session/new", { cwd, mcpServers: [] });
    assert.equal(typeof r.sessionId, "string");
    first = r.sessionId;
  });
  // Every check below but the unknown method needs a session: without one it cannot run (and
  // a request without a sessionId would be the runner's mistake, not the agent's).
  const withSession = (name, body) => (sessionOk ? check(name, body) : blocked(name, "session/new failed above"));

  await withSession("session/prompt: text turn streams chunks and ends with a stop reason", async () => {
    const r = await ctx.request("session/prompt", { sessionId: first, prompt: [{ type: "text", text: "hello from acp" }] });
    assert.ok(STOP.includes(r.stopReason), r.stopReason);
    const got = updates.get(first) ?? [];
    assert.ok(got.some((u) => u.sessionUpdate === "agent_message_chunk"), "no agent_message_chunk");
    if (superpi) {
      assert.equal(r.stopReason, "end_turn");
      assert.equal(text(got, "agent_message_chunk"), "hello from acp");
    } else if (fakeModel) {
      assert.equal(r.stopReason, "end_turn");
      assert.match(text(got, "agent_message_chunk"), /hello from acp/, "the model's answer (an echo) is not in the chunks");
    }
  });

  await check("a request for an unknown method gets -32601", async () => {
    await assert.rejects(ctx.request("no/such_method", {}), (e) => e?.code === -32601);
  });

  const SUPERPI_ONLY = {
    "authMethods: the provider keys; authenticate names a missing one": "superpi's own keys",
    "a write shows its diff (tool call content of type diff)": "superpi's write tool",
    "session/set_mode plan: a write is then refused; an unknown mode is an error": "superpi's modes",
    "update_plan: the plan reaches the client as plan updates": "superpi's update_plan tool",
    "_session/steering: superpi's extension joins a prompt to the running turn": "superpi's extension",
    "systemPrompt (append) reaches the model; usage_update follows the turn": "the mock's @system directive",
    "additionalDirectories: a write there runs, one beside it is refused": "superpi's write tool",
    "an elicited question: the model's ask_question as an elicitation/create form": "superpi's ask_question tool",
    "logout and session/delete: the deleted session is gone": "a conversation a directive made",
  };
  const DIRECTED = ["tool call: tool_call then tool_call_update completed", "permission: request_permission answered allow_once, the call runs", "permission: reject_once refuses the call", "session/cancel ends the turn with cancelled", "session/load replays the conversation before answering", "session/list, session/resume and session/close (as advertised)"];
  if (!superpi) {
    for (const [n, why] of Object.entries(SUPERPI_ONLY)) skip(n, `checks ${why}`);
  }
  if (!directed) {
    for (const n of DIRECTED) skip(n, "needs a model that follows the directives: superpi's mock, or --fake-model");
    return;
  }

  if (superpi) await check("authMethods: the provider keys; authenticate names a missing one", async () => {
    const ids = init.authMethods.map((m) => m.id);
    assert.deepEqual(ids, ["env:OPENAI_API_KEY", "env:ANTHROPIC_API_KEY", "env:GEMINI_API_KEY"]);
    const missing = init.authMethods.find((m) => m._meta?.superpi?.set === false);
    assert.ok(missing, "every key is set in this environment: nothing to check");
    const env = missing._meta.superpi.env;
    await assert.rejects(ctx.request("authenticate", { methodId: missing.id }), (e) => e?.code === -32000 && e.message.includes(env));
  });

  await withSession("tool call: tool_call then tool_call_update completed", async () => {
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
    permissionAnswer = "allow_once";
    const directive = superpi ? '@tool ls {"path": "."}' : shell("ls");
    const r = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: directive }] });
    assert.equal(r.stopReason, "end_turn");
    const got = updates.get(sessionId) ?? [];
    const call = got.find((u) => u.sessionUpdate === "tool_call");
    assert.ok(call, `no tool_call update; the agent said: ${text(got, "agent_message_chunk").slice(0, 300)}`);
    assert.ok(call.kind, "the tool_call has no kind");
    const last = got.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId).at(-1);
    assert.equal(last?.status, "completed", JSON.stringify(last));
    if (superpi) assert.match(JSON.stringify(last.content ?? last.rawOutput ?? ""), /hello\.txt/);
    else {
      // The listing reaches the client somewhere in the call's updates (content or rawOutput).
      const mine = got.filter((u) => u.toolCallId === call.toolCallId);
      const all = mine.map((u) => JSON.stringify({ content: u.content, rawOutput: u.rawOutput }));
      const meta = mine.filter((u) => JSON.stringify(u._meta ?? {}).includes("hello.txt")).map((u) => Object.keys(u._meta));
      assert.ok(
        all.some((u) => u.includes("hello.txt")),
        `the command's output (hello.txt) is in no content or rawOutput of the call's updates (${all.join(" ").slice(0, 300)})${meta.length ? `; only in _meta ${JSON.stringify(meta.flat())}` : ""}`,
      );
    }
  });

  if (superpi) await withSession("a write shows its diff (tool call content of type diff)", async () => {
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
    const r = await ctx.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: '@tool write {"path": "written.txt", "content": "new text\\n"}' }],
    });
    assert.equal(r.stopReason, "end_turn");
    const diffs = updates.get(sessionId).flatMap((u) => (u.content ?? []).filter?.((c) => c.type === "diff") ?? []);
    assert.ok(diffs.length > 0, "no diff content");
    assert.match(diffs.at(-1).path, /written\.txt$/);
    assert.equal(diffs.at(-1).newText, "new text\n");
  });

  const runBash = async (file, answer) => {
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
    // Another agent is first put in its mode that asks before a command (ACP_ASKING_MODE).
    if (!superpi && process.env.ACP_ASKING_MODE) await ctx.request("session/set_mode", { sessionId, modeId: process.env.ACP_ASKING_MODE });
    permissionAnswer = answer;
    const before = asked.length;
    const r = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: shell(`touch ${file}`, true) }] });
    assert.equal(r.stopReason, "end_turn", `the turn ended with ${r.stopReason}, not end_turn (cancelled is for session/cancel)`);
    const got = updates.get(sessionId) ?? [];
    assert.ok(got.some((u) => u.sessionUpdate === "tool_call"), `no tool_call; the agent said: ${text(got, "agent_message_chunk").slice(0, 300)}`);
    assert.equal(asked.length, before + 1, "no session/request_permission for the command");
    const q = asked.at(-1);
    assert.equal(q.sessionId, sessionId);
    const kinds = q.options.map((o) => o.kind).sort();
    // superpi's: the four, then "always in this project" and "always for me" (both of kind
    // allow_always) for a call that can be said as an exact rule, as `touch FILE` can.
    if (superpi) {
      assert.deepEqual(kinds, ["allow_always", "allow_always", "allow_always", "allow_once", "reject_always", "reject_once"]);
      assert.deepEqual(q.options.slice(4).map((o) => o.optionId), ["allow_always_project", "allow_always_user"]);
    }
    else for (const k of ["allow_once", "reject_once"]) assert.ok(kinds.includes(k), `no ${k} option: ${kinds}`);
    const statuses = updates.get(sessionId).filter((u) => u.sessionUpdate === "tool_call_update").map((u) => u.status).filter(Boolean);
    return statuses.at(-1);
  };

  await withSession("permission: request_permission answered allow_once, the call runs", async () => {
    assert.equal(await runBash("allowed.txt", "allow_once"), "completed");
    assert.ok(existsSync(join(cwd, "allowed.txt")), "the command did not run");
  });

  await withSession("permission: reject_once refuses the call", async () => {
    assert.equal(await runBash("refused.txt", "reject_once"), "failed");
    assert.ok(!existsSync(join(cwd, "refused.txt")), "the refused command ran");
  });

  await withSession("session/cancel ends the turn with cancelled", async () => {
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
    // superpi's mock streams slowly; the fake model starts an answer that never ends.
    const slow = superpi ? "@slow 50\n@deltas 400" : "@hold";
    const turn = ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: slow }] });
    const deadline = Date.now() + 10_000;
    while (!(updates.get(sessionId) ?? []).some((u) => u.sessionUpdate === "agent_message_chunk")) {
      assert.ok(Date.now() < deadline, "no chunk before cancelling");
      await new Promise((r) => setTimeout(r, 20));
    }
    await ctx.notify("session/cancel", { sessionId });
    const r = await turn;
    assert.equal(r.stopReason, "cancelled");
  });

  if (superpi) await withSession("update_plan: the plan reaches the client as plan updates", async () => {
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
    const plan = [
      { step: "read the code", status: "completed" },
      { step: "fix the bug", status: "in_progress" },
      { step: "run the tests", status: "pending" },
    ];
    const r = await ctx.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: `@tool update_plan ${JSON.stringify({ plan })}` }],
    });
    assert.equal(r.stopReason, "end_turn");
    const plans = updates.get(sessionId).filter((u) => u.sessionUpdate === "plan");
    assert.equal(plans.length, 1, `plan updates: ${JSON.stringify(plans)}`);
    assert.deepEqual(
      plans[0].entries.map((e) => [e.content, e.status]),
      [["read the code", "completed"], ["fix the bug", "in_progress"], ["run the tests", "pending"]],
    );
  });

  if (superpi) await withSession("_session/steering: superpi's extension joins a prompt to the running turn", async () => {
    // ACP v1 cannot advertise steering: superpi names its method in the capabilities' _meta.
    assert.equal(init.agentCapabilities._meta?.superpi?.steering, "_session/steering");
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
    const steer = (words) => ctx.request("_session/steering", { sessionId, prompt: [{ type: "text", text: words }] });
    await assert.rejects(steer("no turn yet"), (e) => e?.code === -32602, "steering with no prompt running");
    permissionAnswer = "allow_once";
    // A turn whose command waits until the check creates `steer-go`.
    const command = "while [ ! -e steer-go ]; do sleep 0.02; done; echo released";
    const turn = ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `@tool bash ${JSON.stringify({ command })}` }] });
    const deadline = Date.now() + 30_000;
    while (!(updates.get(sessionId) ?? []).some((u) => u.sessionUpdate === "tool_call_update" && u.status === "in_progress")) {
      assert.ok(Date.now() < deadline, "the command never started");
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.deepEqual(await steer("steered words"), { steered: true });
    writeFileSync(join(cwd, "steer-go"), "");
    // The running prompt answers at the turn's end (the steering did not end it), and the
    // mock answers the latest prompt it was sent: the steering one, in the same turn.
    const r = await turn;
    assert.equal(r.stopReason, "end_turn");
    assert.match(text(updates.get(sessionId), "agent_message_chunk"), /steered words/);
  });

  if (!superpi && !init.agentCapabilities.loadSession) skip("session/load replays the conversation before answering", "loadSession is not advertised");
  else await withSession("session/load replays the conversation before answering", async () => {
    assert.equal(init.agentCapabilities.loadSession, true, "loadSession is not advertised");
    const before = (updates.get(first) ?? []).length;
    await ctx.request("session/load", { sessionId: first, cwd, mcpServers: [] });
    const replay = updates.get(first).slice(before);
    if (superpi) {
      assert.equal(text(replay, "user_message_chunk"), "hello from acp");
      assert.equal(text(replay, "agent_message_chunk"), "hello from acp");
    } else {
      assert.match(text(replay, "user_message_chunk"), /hello from acp/, "the prompt is not replayed");
      assert.match(text(replay, "agent_message_chunk"), /hello from acp/, "the answer is not replayed");
    }
  });

  if (superpi) await withSession("session/set_mode plan: a write is then refused; an unknown mode is an error", async () => {
    const r = await ctx.request("session/new", { cwd, mcpServers: [] });
    assert.ok(r.modes, "session/new has no modes");
    const ids = r.modes.availableModes.map((m) => m.id);
    assert.ok(ids.includes("plan"), `no plan mode in ${ids}`);
    await ctx.request("session/set_mode", { sessionId: r.sessionId, modeId: "plan" });
    const p = await ctx.request("session/prompt", {
      sessionId: r.sessionId,
      prompt: [{ type: "text", text: '@tool write {"path": "planned.txt", "content": "x"}' }],
    });
    assert.equal(p.stopReason, "end_turn");
    const last = updates.get(r.sessionId).filter((u) => u.sessionUpdate === "tool_call_update" && u.status).at(-1);
    assert.equal(last?.status, "failed", "the write was not refused in plan mode");
    assert.ok(!existsSync(join(cwd, "planned.txt")), "the write ran in plan mode");
    await assert.rejects(ctx.request("session/set_mode", { sessionId: r.sessionId, modeId: "no-such-mode" }), (e) => typeof e?.code === "number");
  });

  if (superpi) await withSession("systemPrompt (append) reaches the model; usage_update follows the turn", async () => {
    assert.ok(init.agentCapabilities.sessionCapabilities?.systemPrompt, "systemPrompt is not advertised");
    const rules = "Answer as the lighthouse keeper.";
    const systemPrompt = { mode: "append", content: [{ type: "text", text: rules }] };
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [], systemPrompt });
    // The mock's `@system` answers with the last paragraph of the system prompt it got.
    await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "@system" }] });
    const got = updates.get(sessionId) ?? [];
    assert.equal(text(got, "agent_message_chunk").trim(), rules);
    const usage = got.filter((u) => u.sessionUpdate === "usage_update");
    assert.ok(usage.length > 0 && usage.every((u) => typeof u.used === "number" && typeof u.size === "number"), JSON.stringify(usage));
  });

  if (superpi) await withSession("additionalDirectories: a write there runs, one beside it is refused", async () => {
    assert.ok(init.agentCapabilities.sessionCapabilities?.additionalDirectories, "additionalDirectories is not advertised");
    const extra = mkdtempSync(join(tmpdir(), "acp-extra-"));
    const beside = mkdtempSync(join(tmpdir(), "acp-beside-"));
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [], additionalDirectories: [extra] });
    const write = (path) => `@tool write ${JSON.stringify({ path, content: "x" })}`;
    await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: write(join(extra, "in.txt")) }] });
    await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: write(join(beside, "out.txt")) }] });
    assert.ok(existsSync(join(extra, "in.txt")), "the write in the extra directory did not run");
    assert.ok(!existsSync(join(beside, "out.txt")), "a write outside every directory ran");
  });

  if (superpi) await withSession("an elicited question: the model's ask_question as an elicitation/create form", async () => {
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
    const ask = { questions: [{ id: "db", question: "Which database?", options: ["sqlite", "postgres"] }] };
    const r = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `@tool ask_question ${JSON.stringify(ask)}` }] });
    assert.equal(r.stopReason, "end_turn");
    const form = elicited.at(-1);
    assert.equal(form?.mode, "form", JSON.stringify(elicited));
    assert.equal(form.sessionId, sessionId);
    assert.deepEqual(form.requestedSchema.required, ["db"]);
    assert.match(text(updates.get(sessionId), "agent_message_chunk"), /ask_question returned: \{"db":"postgres"\}/);
  });

  if (superpi) await withSession("logout and session/delete: the deleted session is gone", async () => {
    assert.ok(init.agentCapabilities.sessionCapabilities?.delete, "session/delete is not advertised");
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
    await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "to be deleted" }] });
    await ctx.request("session/delete", { sessionId });
    await assert.rejects(ctx.request("session/load", { sessionId, cwd, mcpServers: [] }), (e) => typeof e?.code === "number");
    const { sessions } = await ctx.request("session/list", { cwd });
    assert.ok(!sessions.some((x) => x.sessionId === sessionId), "the deleted session is listed");
    await ctx.request("logout", {});
  });

  const caps = init.agentCapabilities.sessionCapabilities ?? {};
  if (!superpi && !(caps.list || caps.resume || caps.close)) skip("session/list, session/resume and session/close (as advertised)", "none of them is advertised");
  else await withSession("session/list, session/resume and session/close (as advertised)", async () => {
    // superpi advertises all three; another agent is checked on what it advertises.
    if (superpi) assert.ok(caps.list && caps.resume && caps.close, `sessionCapabilities: ${JSON.stringify(caps)}`);
    if (caps.list) {
      const { sessions } = await ctx.request("session/list", { cwd });
      assert.ok(sessions.some((x) => x.sessionId === first), "the first session is not listed");
    }
    if (caps.resume) {
      const before = (updates.get(first) ?? []).length;
      await ctx.request("session/resume", { sessionId: first, cwd, mcpServers: [] });
      const r = await ctx.request("session/prompt", { sessionId: first, prompt: [{ type: "text", text: "after resume" }] });
      assert.equal(r.stopReason, "end_turn");
      const after = updates.get(first).slice(before);
      assert.ok(!after.some((u) => u.sessionUpdate === "user_message_chunk" && u.content?.text === "hello from acp"), "resume replayed the history");
      if (superpi) assert.equal(text(after, "agent_message_chunk"), "after resume");
      else assert.match(text(after, "agent_message_chunk"), /after resume/);
    }
    if (caps.close) await ctx.request("session/close", { sessionId: first });
  });
});

// Every message of the whole exchange, both ways (how many varies from run to run, so the
// check's name, which the third-party record compares, does not say).
verdict(`every message valid against schema/v1/schema.json`, validateExchange(log, ["no/such_method"]));
stopAgent();
done();
