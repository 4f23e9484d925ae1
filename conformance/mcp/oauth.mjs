// superpi's MCP client against OAuth-protected servers: the official conformance suite's
// `auth/*` client scenarios (each starts an MCP server and its authorization server on
// localhost), with ./oauth-client.mjs as the client command: `superpi mcp login` with a
// $BROWSER that follows the authorization server's redirect, then `superpi run` calling the
// server's tool. One counted check per scenario: every check the suite reports is SUCCESS or
// INFO, and the client's outcome is the one the scenario asks for.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { check, skip } from "../lib/report.mjs";

const CLIENT = join(dirname(fileURLToPath(import.meta.url)), "oauth-client.mjs");

// Scenario -> the outcome it asks of the client: the tool answered, or the login or call
// refused (a check of the suite then says whether for the right reason).
const SCENARIOS = {
  "auth/metadata-default": "answered",
  "auth/metadata-var1": "answered",
  "auth/metadata-var2": "answered",
  "auth/metadata-var3": "answered",
  "auth/basic-cimd": "answered",
  "auth/scope-from-www-authenticate": "answered",
  "auth/scope-from-scopes-supported": "answered",
  "auth/scope-omitted-when-undefined": "answered",
  "auth/scope-step-up": "answered",
  "auth/scope-retry-limit": "refused",
  "auth/token-endpoint-auth-basic": "answered",
  "auth/token-endpoint-auth-post": "answered",
  "auth/token-endpoint-auth-none": "answered",
  "auth/resource-mismatch": "refused",
  "auth/offline-access-scope": "answered",
  "auth/offline-access-not-supported": "answered",
};

// Scenarios of flows superpi does not offer, on purpose (shown as skip with why).
const LEFT_OUT = {
  "auth/pre-registration":
    "a pre-registered confidential client (client_secret_basic): superpi is a public client and keeps no secret in its settings (`oauth.client_id` names a pre-registered public client)",
  "auth/2025-03-26-oauth-metadata-backcompat, auth/2025-03-26-oauth-endpoint-fallback":
    "2025-03-26 authorization without protected resource metadata: superpi follows 2025-11-25 and later, refuses a server that publishes no OAuth metadata, and keeps RFC 8414's issuer check (the back-compat server's issuer differs from its metadata URL)",
  "auth/client-credentials-jwt, auth/client-credentials-basic":
    "the client-credentials extension (a machine's own secret or key, no person): superpi logs in a person with the authorization code flow only",
  "auth/cross-app-access-complete-flow": "the enterprise-managed authorization extension (an identity provider's token exchanged for access): not offered",
};

function runScenario(node22, cli, scenario, superpiBin, via) {
  const cwd = mkdtempSync(join(tmpdir(), "mcp-oauth-"));
  return new Promise((ok) => {
    const args = [cli, "client", "--command", `${node22} ${CLIENT}`, "--scenario", scenario, "--timeout", "90000", "--output-dir", join(cwd, "results")];
    const child = spawn(node22, args, { cwd, env: { ...process.env, SUPERPI_BIN: superpiBin, SUPERPI_VIA: via ?? "" }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (code) => {
      const found = { code, out, checks: [], stdout: "", stderr: "" };
      try {
        for (const f of readdirSync(join(cwd, "results"), { recursive: true })) {
          const path = join(cwd, "results", f);
          if (f.endsWith("checks.json")) found.checks.push(...JSON.parse(readFileSync(path, "utf8")));
          if (f.endsWith("stdout.txt")) found.stdout = readFileSync(path, "utf8");
          if (f.endsWith("stderr.txt")) found.stderr = readFileSync(path, "utf8");
        }
      } catch {}
      rmSync(cwd, { recursive: true, force: true });
      ok(found);
    });
  });
}

export async function runOAuth(node22, cli) {
  const bin = process.env.SUPERPI_BIN;
  if (!bin || process.env.MCP_HTTP_IS_SUPERPI !== "1") {
    skip("suite client auth/* (superpi mcp login)", "checks superpi's own MCP client: not in a run pointed at another server");
    return;
  }
  const runs = Object.entries(SCENARIOS).map(([scenario, wanted]) => [scenario, wanted, undefined]);
  // The same login from an editor: `superpi acp`, the URL through ACP's URL elicitation.
  runs.push(["auth/metadata-default", "answered", "acp"]);
  for (const [scenario, wanted, via] of runs) {
    const how = via === "acp" ? "an editor's ACP URL elicitation, then a tool call" : "superpi mcp login, then a tool call";
    await check(
      `suite client ${scenario} (${how})`,
      async () => {
        const r = await runScenario(node22, cli, scenario, bin, via);
        const tail = () => `client stderr: ${r.stderr.slice(-900)}`;
        assert.ok(r.checks.length > 0, `no results (exit ${r.code}): ${r.out.replace(/\x1b\[[0-9;]*m/g, "").slice(-800)}`);
        const bad = r.checks.filter((c) => c.status !== "SUCCESS" && c.status !== "INFO");
        assert.deepEqual(
          bad.map((c) => `${c.id}: ${c.status}: ${c.description}`),
          [],
          `the suite's checks that did not pass; ${tail()}`,
        );
        const line = r.stdout.trim().split("\n").at(-1) ?? "";
        let outcome;
        try {
          outcome = JSON.parse(line);
        } catch {
          assert.fail(`the client printed no outcome (${JSON.stringify(line)}); ${tail()}`);
        }
        assert.equal(outcome.outcome, wanted, `${JSON.stringify(outcome)}; ${tail()}`);
      },
      { timeoutMs: 120_000 },
    );
  }
  for (const [names, why] of Object.entries(LEFT_OUT)) skip(`suite client ${names}`, `not offered: ${why}`);
}
