// The installed distribution, checked by .ci/dist with the official clients: the ACP agent
// (ACP_COMMAND: the archive's `superpi acp`, or the npm package's through npx) through the ACP
// SDK, initialize, session/new and one prompt on the mock model, its authMethods as the ACP
// registry's verification accepts them; the MCP server (MCP_COMMAND) through the MCP SDK; and
// the registry entry (AGENT_JSON, ICON) against the registry's kept schema (SCHEMA) with Ajv
// and the icon rules of the registry's build. Each part runs when its variables are set; any
// failure exits 1 with the reason.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import Ajv from "ajv";
import addFormats from "ajv-formats";

const env = process.env;
const cwd = env.CHECK_WORKSPACE || process.cwd();
const within = (ms, promise, what) =>
  Promise.race([promise, new Promise((_, no) => setTimeout(() => no(new Error(`${what}: no answer in ${ms} ms`)), ms).unref())]);

async function checkAcp(command) {
  const agent = spawn("sh", ["-c", `exec ${command}`], { cwd, stdio: ["pipe", "pipe", "inherit"], detached: true });
  const stop = () => {
    try {
      process.kill(-agent.pid, "SIGKILL");
    } catch {}
  };
  process.on("exit", stop);
  const chunks = [];
  const app = acp.client({ name: "superpi-dist-check" }).onNotification("session/update", ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk" && params.update.content?.type === "text") {
      chunks.push(params.update.content.text);
    }
  });
  const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
  await within(60_000, app.connectWith(stream, async (ctx) => {
    const init = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    assert.equal(init.protocolVersion, 1);
    // The registry's rule (its verify_agents.py): at least one method of type agent or terminal,
    // a method without a type being of type agent.
    const types = (init.authMethods ?? []).map((m) => m.type ?? "agent");
    assert.ok(types.some((t) => t === "agent" || t === "terminal"), `authMethods: ${JSON.stringify(init.authMethods)}`);
    const { sessionId } = await ctx.request("session/new", { cwd, mcpServers: [] });
    assert.equal(typeof sessionId, "string");
    const answer = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hello from the archive" }] });
    assert.equal(answer.stopReason, "end_turn");
    assert.equal(chunks.join(""), "hello from the archive");
  }), `ACP through ${command}`);
  stop();
  console.log(`ok: ACP initialize, session/new, prompt through ${command}`);
}

async function checkMcp(command) {
  const client = new Client({ name: "superpi-dist-check", version: "1.0.0" }, { capabilities: {} });
  await within(60_000, client.connect(new StdioClientTransport({ command: "sh", args: ["-c", `exec ${command}`], cwd, env: { ...env }, stderr: "inherit" })), "MCP initialize");
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of ["read", "ls"]) assert.ok(names.includes(name), `no ${name} tool: ${names}`);
  const ls = await client.callTool({ name: "ls", arguments: { path: "." } });
  assert.ok(!ls.isError, JSON.stringify(ls));
  assert.match(ls.content.map((c) => c.text).join(""), /marker\.txt/);
  await client.close();
  console.log(`ok: MCP initialize, tools/list, tools/call ls through ${command}`);
}

function checkEntry(agentJson, schemaPath, iconPath) {
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  const entry = JSON.parse(readFileSync(agentJson, "utf8"));
  const valid = ajv.validate(JSON.parse(readFileSync(schemaPath, "utf8")), entry);
  assert.ok(valid, `${agentJson}: ${ajv.errorsText()}`);
  // The registry's build: the npx package pinned to the entry's version, never @latest.
  assert.equal(entry.distribution.npx.package.split("@").pop(), entry.version);
  const icon = readFileSync(iconPath, "utf8");
  assert.match(icon, /viewBox="0 0 16 16"/, "the icon is 16x16");
  assert.match(icon, /currentColor/, "the icon is drawn in currentColor");
  for (const [, value] of icon.matchAll(/\b(?:fill|stroke)\s*[=:]\s*["']?([^"';\s>]+)/gi)) {
    assert.ok(["currentcolor", "none", "inherit"].includes(value.toLowerCase()), `the icon has a colour: ${value}`);
  }
  console.log(`ok: ${agentJson} validates against ${schemaPath}; the icon is monochrome 16x16`);
}

try {
  if (env.AGENT_JSON) checkEntry(env.AGENT_JSON, env.SCHEMA, env.ICON);
  if (env.ACP_COMMAND) await checkAcp(env.ACP_COMMAND);
  if (env.MCP_COMMAND) await checkMcp(env.MCP_COMMAND);
  process.exit(0);
} catch (err) {
  console.error(`FAIL: ${err?.stack ?? err}`);
  process.exit(1);
}
