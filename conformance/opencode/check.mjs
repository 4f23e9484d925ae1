// OpenCode (npm `opencode-ai`, pinned below; ~185 MB, so not part of CI) against superpi:
//  - as an MCP host of `superpi mcp`: frontends/mcp/scripts/opencode-check.sh (opencode mcp
//    list shows superpi connected; `opencode run` with a scripted model calls superpi_read);
//  - with `superpi gateway` as its OpenAI-compatible provider (@ai-sdk/openai-compatible, built
//    into OpenCode), offline: `opencode run` against the mock model gets the agent's answer.
// OpenCode is installed once into OPENCODE_DIR (outside the repository) and reused.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { check, done, need } from "../lib/report.mjs";

const VERSION = "1.18.33";
const dir = need("OPENCODE_DIR");
const bin = need("SUPERPI_BIN");
const gateway = need("GATEWAY_URL");
const script = need("OPENCODE_CHECK");
const opencode = join(dir, "node_modules/.bin/opencode");

function run(cmd, args, options) {
  return new Promise((ok) => {
    const child = spawn(cmd, args, { ...options, stdio: ["pipe", "pipe", "pipe"] });
    child.stdin.end(options.input ?? "");
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 300_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      ok({ code, out, err });
    });
  });
}

await check(`opencode-ai@${VERSION} installed (${dir})`, async () => {
  if (existsSync(opencode)) {
    const v = spawnSync(opencode, ["--version"], { encoding: "utf8" }).stdout.trim();
    if (v === VERSION) return;
  }
  mkdirSync(dir, { recursive: true });
  const r = await run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", dir, `opencode-ai@${VERSION}`], { timeoutMs: 600_000 });
  assert.equal(r.code, 0, r.err.slice(-1500));
  assert.ok(existsSync(opencode), "no node_modules/.bin/opencode after the install");
}, { timeoutMs: 620_000 });

// 1. As an MCP host: the MCP frontend's own script, reusing the install above.
await check("as MCP host: frontends/mcp/scripts/opencode-check.sh", async () => {
  const r = await run("bash", [script, bin], { env: { ...process.env, OPENCODE_DIR: dir }, timeoutMs: 600_000 });
  const lines = r.out.split("\n");
  const failed = lines.filter((l) => l.startsWith("FAIL"));
  assert.deepEqual(failed, [], r.out.slice(-1500));
  assert.ok(lines.some((l) => /^\d+ passed, 0 failed$/.test(l)), r.out.slice(-1500) + r.err.slice(-500));
}, { timeoutMs: 620_000 });

// 2. With the gateway as its OpenAI-compatible provider.
await check("as OpenAI client: opencode run through superpi gateway", async () => {
  const home = join(process.cwd(), "opencode-home");
  const conf = join(home, ".config/opencode");
  mkdirSync(conf, { recursive: true });
  writeFileSync(join(conf, "opencode.json"), JSON.stringify({
    $schema: "https://opencode.ai/config.json",
    provider: {
      superpi: {
        npm: "@ai-sdk/openai-compatible",
        name: "superpi",
        options: { baseURL: `${gateway}/v1`, apiKey: "local" },
        models: { "superpi-code": { name: "superpi code", limit: { context: 128000, output: 8192 } } },
      },
    },
    share: "disabled",
    autoupdate: false,
  }));
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local/share"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_STATE_HOME: join(home, ".local/state"),
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    NPM_CONFIG_REGISTRY: "http://127.0.0.1:9/",
  };
  // The agent runs `ls` in the gateway's workspace: the answer names hello.txt, which the
  // prompt does not, so it can only have come back through the gateway.
  // On stdin: opencode-ai 1.18.33 sends a message given as an argument JSON-quoted.
  const input = '@tool ls {"path": "."}';
  const r = await run(opencode, ["run", "--model", "superpi/superpi-code", "--title", "conformance"], { env, input, timeoutMs: 180_000 });
  assert.equal(r.code, 0, (r.out + r.err).slice(-1500));
  assert.match(r.out, /The tools answered/, (r.out + r.err).slice(-1500));
  assert.match(r.out, /hello\.txt/);
}, { timeoutMs: 200_000 });

done();
