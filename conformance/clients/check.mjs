// Every client configuration snippet of the READMEs, against the real client where it installs
// from npm (Claude Code, Codex, OpenCode; pinned below, installed once into CLIENTS_DIR and
// OPENCODE_DIR, outside the repository), else started as written with the protocol's official
// client (VS Code's .vscode/mcp.json with the MCP SDK, Zed's and JetBrains' agent_servers with
// the ACP SDK), and Codex's provider entry for the gateway with `codex exec` answering through
// it. The snippets are read from the READMEs (the `<!-- check: NAME -->` line above a code
// block), so a snippet that drifts from what works fails here. `superpi` in a snippet
// becomes SUPERPI_BIN, `http://127.0.0.1:4000` the gateway started for this run.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { check, done, need } from "../lib/report.mjs";

const CLIENTS = { "@anthropic-ai/claude-code": "2.1.332", "@openai/codex": "0.171.0" };
const OPENCODE = "1.18.33";
const bin = need("SUPERPI_BIN");
const gateway = need("GATEWAY_URL");
const repo = need("REPO_DIR");
const clientsDir = need("CLIENTS_DIR");
const opencodeDir = need("OPENCODE_DIR");
// Where each client is (or is installed): CLAUDE_DIR and CODEX_DIR may name installations
// already made at the pinned versions (CI's agent backends), else CLIENTS_DIR holds both.
const claudeDir = process.env.CLAUDE_DIR || clientsDir;
const codexDir = process.env.CODEX_DIR || clientsDir;
const claude = join(claudeDir, "node_modules/.bin/claude");
const codex = join(codexDir, "node_modules/.bin/codex");
const opencode = join(opencodeDir, "node_modules/.bin/opencode");

/** The snippets marked `<!-- check: NAME -->` in a README: name → code. */
function snippets(file) {
  const text = readFileSync(join(repo, file), "utf8");
  const found = {};
  for (const m of text.matchAll(/<!-- check: ([\w-]+) -->\n```\w*\n([\s\S]*?)\n```/g)) found[m[1]] = m[2];
  return found;
}
const docs = { ...snippets("frontends/mcp/README.md"), ...snippets("frontends/acp/README.md"), ...snippets("frontends/openai/README.md") };

/** A snippet with this run's binary and gateway in place of the documented ones. */
function snippet(name) {
  const text = docs[name];
  assert.ok(text, `no snippet marked <!-- check: ${name} --> in the READMEs`);
  const quoted = JSON.stringify(bin);
  return text
    .replaceAll("/absolute/path/to/superpi", bin)
    .replace(/("command"\s*:\s*)"superpi"/g, `$1${quoted}`) // JSON commands
    .replace(/^(command\s*=\s*)"superpi"/gm, `$1${quoted}`) // TOML commands
    .replace(/("command"\s*:\s*\[\s*)"superpi"/g, `$1${quoted}`) // OpenCode's command arrays
    .replaceAll("http://127.0.0.1:4000", gateway);
}

/** A private home, XDG directories and project for one client; superpi's own dirs stay the run's. */
function sandboxEnv() {
  const root = mkdtempSync(join(process.cwd(), "client-"));
  const dirs = { home: "home", project: "project", config: "xdg/config", data: "xdg/data", cache: "xdg/cache", state: "xdg/state" };
  for (const [k, v] of Object.entries(dirs)) mkdirSync((dirs[k] = join(root, v)), { recursive: true });
  writeFileSync(join(dirs.project, "hello.txt"), "hi\n");
  const env = {
    ...process.env,
    HOME: dirs.home,
    XDG_CONFIG_HOME: dirs.config,
    XDG_DATA_HOME: dirs.data,
    XDG_CACHE_HOME: dirs.cache,
    XDG_STATE_HOME: dirs.state,
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    NPM_CONFIG_REGISTRY: "http://127.0.0.1:9/",
    DISABLE_AUTOUPDATER: "1",
  };
  return { ...dirs, env };
}

function run(cmd, args, { cwd, env, timeoutMs = 120_000 }) {
  return new Promise((ok) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      ok({ code, out: out.replace(/\x1b\[[0-9;]*m/g, ""), err });
    });
  });
}

async function install(dir, packages) {
  mkdirSync(dir, { recursive: true });
  const r = await run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", dir, ...packages], { cwd: dir, env: process.env, timeoutMs: 900_000 });
  assert.equal(r.code, 0, r.err.slice(-1500));
}

await check(`clients installed (${Object.entries(CLIENTS).map(([p, v]) => `${p}@${v}`).join(", ")}, opencode-ai@${OPENCODE})`, async () => {
  const version = (b) => (existsSync(b) ? spawnSync(b, ["--version"], { encoding: "utf8", env: { ...process.env, HOME: process.cwd() } }).stdout : "");
  if (!version(claude).includes(CLIENTS["@anthropic-ai/claude-code"])) {
    await install(claudeDir, [`@anthropic-ai/claude-code@${CLIENTS["@anthropic-ai/claude-code"]}`]);
  }
  if (!version(codex).includes(CLIENTS["@openai/codex"])) await install(codexDir, [`@openai/codex@${CLIENTS["@openai/codex"]}`]);
  if (version(opencode).trim() !== OPENCODE) await install(opencodeDir, [`opencode-ai@${OPENCODE}`]);
  for (const b of [claude, codex, opencode]) assert.ok(existsSync(b), `${b} is missing after the install`);
}, { timeoutMs: 1_900_000 });

// ---- Claude Code: .mcp.json, stdio and HTTP; `claude mcp get` connects to the server.
for (const name of ["claude-stdio", "claude-http"]) {
  await check(`Claude Code: .mcp.json (${name.slice(7)}) connects`, async () => {
    const s = sandboxEnv();
    writeFileSync(join(s.project, ".mcp.json"), snippet(name));
    // Project servers need the user's approval; this is it, for the private HOME only.
    mkdirSync(join(s.home, ".claude"), { recursive: true });
    writeFileSync(join(s.home, ".claude/settings.json"), JSON.stringify({ enableAllProjectMcpServers: true }));
    const r = await run(claude, ["mcp", "get", "superpi"], { cwd: s.project, env: s.env });
    assert.match(r.out, /Status: ✔ Connected/, r.out + r.err);
  });
}

await check("Claude Code: `claude mcp add superpi -- superpi mcp` connects", async () => {
  const s = sandboxEnv();
  const add = await run(claude, ["mcp", "add", "superpi", "--", bin, "mcp"], { cwd: s.project, env: s.env });
  assert.equal(add.code, 0, add.out + add.err);
  const r = await run(claude, ["mcp", "list"], { cwd: s.project, env: s.env });
  assert.match(r.out, /superpi: .* - ✔ Connected/, r.out + r.err);
});

await check("Claude Code: started in the home directory, superpi fails naming --workspace", async () => {
  const s = sandboxEnv();
  writeFileSync(join(s.home, ".mcp.json"), snippet("claude-stdio"));
  mkdirSync(join(s.home, ".claude"), { recursive: true });
  writeFileSync(join(s.home, ".claude/settings.json"), JSON.stringify({ enableAllProjectMcpServers: true }));
  const r = await run(claude, ["mcp", "get", "superpi"], { cwd: s.home, env: s.env });
  assert.match(r.out, /Failed to connect/, r.out + r.err);
  const direct = await run(bin, ["mcp"], { cwd: s.home, env: s.env });
  assert.notEqual(direct.code, 0);
  assert.match(direct.err, /--workspace/, direct.err);
});

// ---- Claude Code with the gateway as its model: settings.json's `env` (frontends/openai/README.md).
// The mock model echoes the prompt, which a new conversation gets after the transcript of what
// came before it (Claude Code's system prompt): the answer ends with the prompt.
await check("Claude Code: settings.json env with the gateway as its model, `claude -p` prints the agent's answer", async () => {
  const s = sandboxEnv();
  mkdirSync(join(s.home, ".claude"), { recursive: true });
  writeFileSync(join(s.home, ".claude/settings.json"), snippet("claude-gateway"));
  const r = await run(claude, ["-p", "answered by the superpi agent"], { cwd: s.project, env: s.env });
  assert.equal(r.code, 0, r.out.slice(-800) + r.err);
  assert.match(r.out, /\n\nanswered by the superpi agent\s*$/, r.out.slice(-800) + r.err);
});

// ---- Codex: config.toml read by `codex mcp list --json`.
await check("Codex: config.toml lists superpi (stdio and HTTP) as written", async () => {
  const s = sandboxEnv();
  mkdirSync(join(s.home, ".codex"), { recursive: true });
  writeFileSync(join(s.home, ".codex/config.toml"), snippet("codex"));
  const r = await run(codex, ["mcp", "list", "--json"], { cwd: s.project, env: s.env });
  assert.equal(r.code, 0, r.err);
  const list = JSON.parse(r.out);
  const stdio = list.find((e) => e.name === "superpi");
  assert.deepEqual([stdio?.transport.type, stdio?.transport.command, stdio?.transport.args], ["stdio", bin, ["mcp"]], r.out);
  const http = list.find((e) => e.name === "superpi-http");
  assert.deepEqual([http?.transport.type, http?.transport.url], ["streamable_http", `${gateway}/mcp`], r.out);
  assert.ok(list.every((e) => e.enabled), r.out);
});

// ---- Codex with superpi's gateway as its model: the Responses API provider entry.
await check("Codex: `codex exec` with the gateway as its model provider (Responses API) answers, `codex exec resume` continues", async () => {
  const s = sandboxEnv();
  mkdirSync(join(s.home, ".codex"), { recursive: true });
  writeFileSync(join(s.home, ".codex/config.toml"), snippet("codex-provider"));
  // The gateway of this run has no token; Codex wants its env_key set all the same.
  const env = { ...s.env, SUPERPI_GATEWAY_TOKEN: "any" };
  const first = await run(codex, ["exec", "--skip-git-repo-check", "@think pondering\nthe first prompt"], { cwd: s.project, env });
  assert.equal(first.code, 0, first.err.slice(-2000));
  // The mock model echoes its prompt: the conversation was seeded with Codex's history (its
  // instructions among it), then the prompt; Codex printed the answer and showed the thinking.
  assert.ok(first.out.trim().endsWith("the first prompt"), first.out.slice(-500) + first.err.slice(-2000));
  assert.match(first.out, /Earlier messages of this conversation/, first.out.slice(0, 500));
  assert.match(first.err, /pondering/, first.err.slice(-2000));
  // The next prompt of the thread continues its conversation: the agent gets only that prompt.
  const second = await run(codex, ["exec", "--skip-git-repo-check", "resume", "--last", "the second prompt"], { cwd: s.project, env });
  assert.equal(second.code, 0, second.err.slice(-2000));
  assert.equal(second.out.trim(), "the second prompt", second.out + second.err.slice(-2000));
}, { timeoutMs: 240_000 });

// ---- OpenCode: both MCP config shapes (`opencode mcp list` connects), and the provider.
for (const name of ["opencode", "opencode-v2"]) {
  await check(`OpenCode: opencode.json (${name === "opencode" ? "mcp.NAME" : "mcp.servers.NAME"}) connects`, async () => {
    const s = sandboxEnv();
    writeFileSync(join(s.project, "opencode.json"), snippet(name));
    const r = await run(opencode, ["mcp", "list"], { cwd: s.project, env: s.env });
    assert.match(r.out, /✓ superpi\s+connected/, r.out + r.err);
  });
}

await check("OpenCode: superpi gateway as its OpenAI-compatible provider lists the harnesses", async () => {
  const s = sandboxEnv();
  mkdirSync(join(s.config, "opencode"), { recursive: true });
  writeFileSync(join(s.config, "opencode/opencode.json"), snippet("opencode-provider"));
  const r = await run(opencode, ["models", "superpi"], { cwd: s.project, env: s.env });
  for (const m of ["superpi/superpi-code", "superpi/superpi-planner", "superpi/superpi-assistant"]) assert.ok(r.out.includes(m), r.out + r.err);
});

// ---- VS Code (not on npm): .vscode/mcp.json started as written with the MCP SDK client.
await check("VS Code: .vscode/mcp.json starts superpi in ${workspaceFolder}", async () => {
  const s = sandboxEnv();
  const server = JSON.parse(snippet("vscode").replaceAll("${workspaceFolder}", s.project)).servers.superpi;
  assert.equal(server.type, "stdio");
  // VS Code starts it from its own directory: the home directory here.
  const transport = new StdioClientTransport({ command: server.command, args: server.args, cwd: s.home, env: s.env, stderr: "pipe" });
  const client = new Client({ name: "vscode-check", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  try {
    const ls = await client.callTool({ name: "ls", arguments: { path: "." } });
    assert.ok(!ls.isError, JSON.stringify(ls));
    assert.match(ls.content.map((c) => c.text).join(""), /hello\.txt/, "ls ran outside ${workspaceFolder}");
  } finally {
    await client.close();
  }
});

// ---- Zed and JetBrains (not on npm): agent_servers started as written with the ACP SDK client.
for (const name of ["zed", "jetbrains"]) {
  await check(`${name === "zed" ? "Zed" : "JetBrains"}: agent_servers starts an ACP agent (initialize, session/new)`, async () => {
    const s = sandboxEnv();
    const agent = JSON.parse(snippet(name)).agent_servers.superpi;
    const child = spawn(agent.command, agent.args, { cwd: s.home, env: { ...s.env, ...agent.env }, stdio: ["pipe", "pipe", "ignore"] });
    try {
      const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
      const app = acp.client({ name: "editor-check" }).onNotification("session/update", () => {});
      await app.connectWith(stream, async (ctx) => {
        const init = await ctx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {}, clientInfo: { name: "editor-check", version: "1" } });
        assert.equal(init.protocolVersion, 1);
        const session = await ctx.request("session/new", { cwd: s.project, mcpServers: [] });
        assert.equal(typeof session.sessionId, "string");
      });
    } finally {
      child.kill("SIGKILL");
    }
  });
}

done();
