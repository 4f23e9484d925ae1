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
// Needs SUPERPI_BIN. Every directory is private to the one scenario and removed at the end,
// after the kernel that `superpi run` started in it is stopped.

import { spawn, spawnSync } from "node:child_process";
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

// The outcome, one JSON line on stdout for conformance/mcp/oauth.mjs: `answered` (the tool ran
// on the server and its `test` text came back) or `refused` with superpi's reason.
let outcome;
try {
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
} finally {
  spawnSync(bin, ["kernel", "stop"], { cwd: dirs.ws, env, stdio: "ignore" });
  rmSync(root, { recursive: true, force: true });
}
console.log(JSON.stringify(outcome));
process.exit(outcome?.outcome === "answered" ? 0 : 1);
