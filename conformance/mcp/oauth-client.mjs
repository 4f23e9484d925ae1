// The client command of the official conformance suite's auth scenarios (`conformance client
// --command "node oauth-client.mjs" --scenario auth/...`): superpi's own MCP client, as a
// person uses it. The suite appends its MCP server's URL; this script writes a private
// superpi configuration naming that URL as the HTTP server `conf`, runs
// `superpi mcp login conf` with $BROWSER set to this script in `--browser` mode (a browser
// that opens the URL and follows its redirects: the scenario's authorization server answers at
// once, back to superpi's loopback redirect), then `superpi run` on the offline mock model
// (no provider variable is passed) with a prompt that calls the server's `test-tool`. Its
// outcome is the last line on stdout; exit 0 when the tool answered.
//
// With SUPERPI_VIA=acp the person is in an editor instead: `superpi acp` driven by the official
// ACP client SDK, which declares URL elicitation; the turn that calls the tool meets the server
// needing a login, superpi sends the authorization URL as an `elicitation/create` in url mode,
// and this client plays the browser (accepts, follows the URL) and answers the tool's
// permission question. The same outcome line follows.
//
// Needs SUPERPI_BIN. Every directory is private to the one scenario and removed at the end,
// after the kernel that `superpi run` started in it is stopped.

import { spawn, spawnSync } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

if (process.argv[2] === "--browser") {
  // The browser: `fetch` follows the authorization server's redirect to superpi's loopback
  // listener, whose page must then load.
  const res = await fetch(process.argv[3], { redirect: "follow" });
  await res.text();
  process.exit(res.ok ? 0 : 1);
}

const url = process.argv.at(-1);
const bin = process.env.SUPERPI_BIN;
if (!bin || !url?.startsWith("http")) {
  console.error("usage: SUPERPI_BIN=... node oauth-client.mjs MCP_SERVER_URL");
  process.exit(2);
}

const root = mkdtempSync(join(tmpdir(), "superpi-oauth-"));
const dirs = { data: join(root, "data"), config: join(root, "config"), run: join(root, "run"), ws: join(root, "ws"), home: join(root, "home") };
for (const d of Object.values(dirs)) mkdirSync(d);
// A person who hosts a Client ID Metadata Document names it in the settings; the suite's CIMD
// scenario expects the URL its own example client uses.
const oauth = process.env.MCP_CONFORMANCE_SCENARIO === "auth/basic-cimd" ? { client_metadata_url: "https://conformance-test.local/client-metadata.json" } : undefined;
writeFileSync(join(dirs.config, "settings.json"), JSON.stringify({ mcp_servers: { conf: { url, oauth } } }));
const env = {
  PATH: process.env.PATH,
  HOME: dirs.home,
  SUPERPI_DATA_DIR: dirs.data,
  SUPERPI_CONFIG_DIR: dirs.config,
  SUPERPI_RUNTIME_DIR: dirs.run,
  RUST_LOG: "warn",
  BROWSER: `${process.execPath} ${fileURLToPath(import.meta.url)} --browser`,
};

/** Runs superpi with `args` to its end: [exit code, stdout, stderr]. */
function superpi(args) {
  return new Promise((ok) => {
    const child = spawn(bin, args, { cwd: dirs.ws, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (code) => ok([code, out, err]));
  });
}

/** `superpi mcp login conf`, the browser answering: whether it logged in. */
async function login() {
  const [code, , err] = await superpi(["mcp", "login", "conf", "--wait-secs", "20"]);
  console.error(`superpi mcp login conf: exit ${code}\n${err}`);
  return code === 0 ? null : err.trim().split("\n").at(-1);
}

/** A turn whose model calls the server's `test-tool`: the call's completion event. */
async function callTool() {
  const prompt = "@tool mcp__conf__test-tool {}";
  const [code, out, err] = await superpi(["run", "--mode", "auto", "--output-format", "stream-json", prompt]);
  console.error(`superpi run: exit ${code}\n${err}`);
  const events = out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  const done = events.find((e) => e.type === "tool_completed" && e.name === "mcp__conf__test-tool");
  console.error(`the tool's result: ${JSON.stringify(done)}`);
  return done;
}

/** The tool called from an editor: `superpi acp` through the official SDK, the login through
 * its URL elicitation. The completed call's text, or undefined. */
async function callToolFromAnEditor() {
  const acp = await import("@agentclientprotocol/sdk");
  const agent = spawn(bin, ["acp"], { cwd: dirs.ws, env, stdio: ["pipe", "pipe", "inherit"] });
  const updates = [];
  const browsing = [];
  const app = acp
    .client({ name: "superpi-conformance-editor" })
    .onNotification("session/update", ({ params }) => updates.push(params.update))
    .onRequest("session/request_permission", ({ params }) => {
      const option = params.options.find((o) => o.kind === "allow_once") ?? params.options[0];
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    })
    .onRequest("elicitation/create", ({ params }) => {
      if (params.mode !== "url") return { action: "decline" };
      console.error(`elicitation/create url: ${params.url}`);
      browsing.push(fetch(params.url, { redirect: "follow" }).then((r) => r.text()).catch((e) => console.error(`the browser: ${e}`)));
      return { action: "accept" };
    });
  try {
    const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
    await app.connectWith(stream, async (ctx) => {
      await ctx.request("initialize", {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, elicitation: { url: {} } },
        clientInfo: { name: "superpi-conformance-editor", version: "1.0.0" },
      });
      const session = await ctx.request("session/new", { cwd: dirs.ws, mcpServers: [] });
      await ctx.request("session/prompt", { sessionId: session.sessionId, prompt: [{ type: "text", text: "@tool mcp__conf__test-tool {}" }] });
    });
    await Promise.all(browsing);
  } finally {
    agent.kill("SIGKILL");
  }
  const done = updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
  const texts = done.flatMap((u) => (u.content ?? []).map((c) => c.content?.text)).filter(Boolean);
  console.error(`elicited logins: ${browsing.length}; completed calls' text: ${JSON.stringify(texts)}`);
  return browsing.length > 0 ? texts : undefined;
}

// The outcome, one JSON line on stdout for conformance/mcp/oauth.mjs: `answered` (the tool ran
// on the server and its `test` text came back) or `refused` with superpi's reason.
let outcome;
try {
  if (process.env.SUPERPI_VIA === "acp") {
    const texts = await callToolFromAnEditor();
    if (texts === undefined) outcome = { outcome: "refused", why: "no URL elicitation was sent" };
    else if (texts.includes("test")) outcome = { outcome: "answered" };
    else outcome = { outcome: "refused", why: `the call's text: ${JSON.stringify(texts)}` };
  } else {
  let refused = await login();
  let done = refused ? undefined : await callTool();
  // A server that asks for more access (403 insufficient_scope) is answered as a person
  // would, told to: `superpi mcp login conf` once more, then the call again.
  if (done?.is_error && done.output.includes("run `superpi mcp login conf` again")) {
    refused = await login();
    done = refused ? undefined : await callTool();
  }
  if (refused) outcome = { outcome: "refused", why: refused };
  else if (done && !done.is_error && done.output === "test") outcome = { outcome: "answered" };
  else outcome = { outcome: "refused", why: done ? done.output : "the tool was not called" };
  }
} finally {
  spawnSync(bin, ["kernel", "stop"], { cwd: dirs.ws, env, stdio: "ignore" });
  rmSync(root, { recursive: true, force: true });
}
console.log(JSON.stringify(outcome));
process.exit(outcome?.outcome === "answered" ? 0 : 1);
