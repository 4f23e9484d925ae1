// One turn of a backend harness through `superpi acp`, driven by the official ACP client SDK
// (@agentclientprotocol/sdk): initialize, session/new with `_meta.harness`, session/set_mode,
// session/prompt; every session/update is kept, every permission question answered with
// PERMISSION (an option kind). Prints one JSON line: the prompt's stop reason, the updates and
// the questions asked. With ANSWERS (a JSON object) the client declares forms
// (`elicitation.form`) and accepts every `elicitation/create` with it as the content; the
// forms asked are printed as `elicited`. With URLS set the client declares URL elicitation
// (`elicitation.url`) and plays the person's browser: it accepts a URL-mode request at once
// and follows its URL (each redirect by hand, as far as the loopback page that ends it); the
// `elicitation/complete` notifications are printed as `completed`.
//
// ACP_COMMAND is the agent's command line (run with sh -c in its own process group);
// WORKSPACE, HARNESS, MODE and PROMPT say what to run; MODEL, when set, is chosen with
// session/set_config_option.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const need = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const agent = spawn("sh", ["-c", `exec ${need("ACP_COMMAND")}`], {
  cwd: need("WORKSPACE"),
  stdio: ["pipe", "pipe", "inherit"],
  detached: true,
});
const stopAgent = () => {
  try {
    process.kill(-agent.pid, "SIGKILL");
  } catch {}
};
process.on("exit", stopAgent);

const updates = [];
const asked = [];
const elicited = [];
const answers = process.env.ANSWERS ? JSON.parse(process.env.ANSWERS) : null;
const completed = [];
const urls = Boolean(process.env.URLS);
const answer = process.env.PERMISSION || "allow_once";
// The browser: follows `url` and each redirect, without cookies or scripts.
const browse = async (url) => {
  for (let hops = 0; url && hops < 5; hops++) {
    const response = await fetch(url, { redirect: "manual" });
    url = response.headers.get("location");
  }
};
const app = acp
  .client({ name: "superpi-acp-sdk-test" })
  .onNotification("session/update", ({ params }) => {
    updates.push(params.update);
  })
  .onRequest("session/request_permission", ({ params }) => {
    asked.push(params);
    const option = params.options.find((o) => o.kind === answer) ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest("elicitation/create", ({ params }) => {
    elicited.push(params);
    if (params.mode === "url") {
      browse(params.url).catch((err) => console.error(`the browser: ${err}`));
      return { action: "accept" };
    }
    return { action: "accept", content: answers };
  })
  .onNotification("elicitation/complete", ({ params }) => {
    completed.push(params);
  });

const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
await app.connectWith(stream, async (ctx) => {
  await ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {
      fs: { readTextFile: false, writeTextFile: false },
      terminal: false,
      ...(answers || urls ? { elicitation: { ...(answers ? { form: {} } : {}), ...(urls ? { url: {} } : {}) } } : {}),
    },
    clientInfo: { name: "superpi-acp-sdk-test", version: "1.0.0" },
  });
  const session = await ctx.request("session/new", {
    cwd: need("WORKSPACE"),
    mcpServers: [],
    _meta: { harness: need("HARNESS") },
  });
  await ctx.request("session/set_mode", { sessionId: session.sessionId, modeId: need("MODE") });
  if (process.env.MODEL) {
    await ctx.request("session/set_config_option", {
      sessionId: session.sessionId,
      configId: "model",
      value: process.env.MODEL,
    });
  }
  const done = await ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: need("PROMPT") }],
  });
  process.stdout.write(JSON.stringify({ stopReason: done.stopReason, updates, asked, elicited, completed }) + "\n");
});
stopAgent();
process.exit(0);
