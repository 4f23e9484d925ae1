// MCP 2026-07-28 with the official v2 TypeScript client (@modelcontextprotocol/client): per
// transport (stdio, Streamable HTTP), the client in its three negotiation modes: `auto` (probes
// with server/discover), pinned to 2026-07-28 (no fallback), and `legacy` (the 2025 initialize
// handshake). Every message the client receives is recorded, so the checks see the wire:
// no Mcp-Session-Id on a 2026-07-28 HTTP connection, the caching hints on lists.

import assert from "node:assert/strict";
import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { check, skip } from "../lib/report.mjs";

export const MODERN = "2026-07-28";

const MODES = [
  ["auto", "auto", "modern"],
  [`pinned ${MODERN}`, { pin: MODERN }, "modern"],
  ["legacy", "legacy", "legacy"],
];

/** Shows `seen` every message the client receives on `transport` (of either SDK). */
export function record(transport, seen) {
  let handler;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler,
    set: (h) => {
      handler = h && ((m, extra) => {
        seen(m);
        h(m, extra);
      });
    },
  });
  return transport;
}

function transportFor(kind, target, extraArgs = "") {
  if (kind === "stdio") {
    return new StdioClientTransport({ command: "sh", args: ["-c", `exec ${target}${extraArgs}`], env: { ...process.env }, stderr: "ignore" });
  }
  return new StreamableHTTPClientTransport(new URL(target));
}

export async function connectV2(kind, target, mode, { capabilities = {}, extraArgs = "" } = {}) {
  const log = [];
  const client = new Client({ name: "superpi-conformance-v2", version: "1.0.0" }, { capabilities, versionNegotiation: { mode } });
  const transport = record(transportFor(kind, target, extraArgs), (m) => log.push(m));
  await client.connect(transport);
  return { client, transport, log };
}

/** Waits (at most 20 s) until `ready()` holds; fails with `why` otherwise. */
async function until(ready, why) {
  const deadline = Date.now() + 20000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(why);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The v2 client's checks on one transport; `superpi` when the target is superpi. */
export async function runV2(kind, target, superpi) {
  for (let [name, mode, era] of MODES) {
    await check(`sdk-v2 ${kind} ${name}: negotiates, lists, calls a tool`, async () => {
      const { client, transport, log } = await connectV2(kind, target, mode);
      try {
        // `auto` falls back to initialize with a server of the 2025 revisions only, as designed.
        if (superpi || mode !== "auto") assert.equal(client.getProtocolEra(), era);
        era = client.getProtocolEra();
        if (era === "modern") {
          assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
          const discover = client.getDiscoverResult();
          assert.ok(discover?.supportedVersions?.includes(MODERN), JSON.stringify(discover));
          assert.ok(discover.supportedVersions.includes("2025-11-25"), "the earlier revisions are no longer offered");
          if (kind === "http") assert.equal(transport.sessionId, undefined, "a 2026-07-28 connection got an Mcp-Session-Id");
        } else {
          assert.equal(client.getNegotiatedProtocolVersion(), "2025-11-25");
          if (kind === "http") assert.ok(transport.sessionId, "no Mcp-Session-Id after initialize");
        }
        const { tools } = await client.listTools();
        assert.ok(tools.length > 0, "no tools");
        const listed = log.find((m) => Array.isArray(m.result?.tools));
        if (era === "modern") {
          assert.equal(typeof listed.result.ttlMs, "number", "tools/list without ttlMs");
          assert.ok(["public", "private"].includes(listed.result.cacheScope), "tools/list without cacheScope");
          if (superpi) assert.deepEqual([listed.result.ttlMs, listed.result.cacheScope], [60000, "private"]);
        } else {
          assert.equal(listed.result.ttlMs, undefined, "a 2025 answer with ttlMs");
        }
        await client.listPrompts();
        await client.listResources();
        if (superpi) {
          const ls = await client.callTool({ name: "ls", arguments: { path: "." } });
          assert.ok(!ls.isError, JSON.stringify(ls));
          assert.match(ls.content.map((c) => c.text).join(""), /hello\.txt/);
          await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), (e) => e instanceof ProtocolError && e.code === -32602);
        }
      } finally {
        await client.close();
      }
    });
  }
  if (!superpi) {
    skip(`sdk-v2 ${kind}: harness_task, input_required`, "needs superpi");
    return;
  }
  await check(`sdk-v2 ${kind} ${MODERN}: harness_task streams progress and answers`, async () => {
    const { client } = await connectV2(kind, target, { pin: MODERN });
    try {
      const progress = [];
      const r = await client.callTool({ name: "harness_task", arguments: { prompt: "done by the harness" } }, { onprogress: (p) => progress.push(p) });
      assert.ok(!r.isError, JSON.stringify(r));
      assert.equal(r.structuredContent?.result, "done by the harness");
      assert.ok(progress.length > 0, "no notifications/progress");
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, "progress does not increase");
    } finally {
      await client.close();
    }
  });
  await check(`sdk-v2 ${kind} ${MODERN}: subscriptions/listen acknowledges what superpi sends`, async () => {
    const { client } = await connectV2(kind, target, { pin: MODERN });
    try {
      const changed = [];
      const updated = [];
      client.setNotificationHandler("notifications/resources/list_changed", () => changed.push(1));
      client.setNotificationHandler("notifications/resources/updated", (n) => updated.push(n.params.uri));
      const lists = await client.listen({ toolsListChanged: true, resourcesListChanged: true });
      assert.equal(lists.honoredFilter.resourcesListChanged, true, JSON.stringify(lists.honoredFilter));
      assert.equal(lists.honoredFilter.toolsListChanged, undefined, "the tool list never changes, yet was accepted");
      if (kind === "stdio") {
        // A turn that waits a minute for its first word: its conversation joins the list, and
        // the transcript changes when the call is cancelled.
        const abort = new AbortController();
        const running = client.callTool({ name: "harness_task", arguments: { prompt: "@slow 60000\nheld" } }, { signal: abort.signal }).catch(() => {});
        await until(() => changed.length > 0, "no notifications/resources/list_changed");
        const { resources } = await client.listResources();
        const uri = resources.map((r) => r.uri).find((u) => u.startsWith("superpi://conversation/"));
        assert.ok(uri, JSON.stringify(resources));
        const one = await client.listen({ resourceSubscriptions: [uri] });
        assert.deepEqual(one.honoredFilter.resourceSubscriptions, [uri]);
        abort.abort();
        await running;
        await until(() => updated.includes(uri), "no notifications/resources/updated for the transcript");
        await one.close();
        assert.equal(await one.closed, "local");
      }
      await lists.close();
    } finally {
      await client.close();
    }
  });
  if (kind === "stdio") {
    await check(`sdk-v2 stdio ${MODERN}: a question is an input_required round (--approval elicit)`, async () => {
      const asked = [];
      const answers = ["accept", "decline"];
      const { client, log } = await connectV2(kind, target, { pin: MODERN }, { capabilities: { elicitation: { form: {} } }, extraArgs: " --approval elicit" });
      client.setRequestHandler("elicitation/create", async (req) => {
        asked.push(req.params.message);
        const action = answers.shift() ?? "decline";
        return action === "accept" ? { action, content: {} } : { action };
      });
      try {
        const yes = await client.callTool({ name: "bash", arguments: { command: "touch v2-yes.txt && echo made" } });
        assert.ok(!yes.isError, JSON.stringify(yes));
        assert.match(yes.content[0].text, /made/);
        assert.equal(asked.length, 1, "the user was not asked");
        assert.match(asked[0], /touch v2-yes\.txt/);
        assert.ok(log.some((m) => m.result?.resultType === "input_required"), "no input_required result on the wire");
        const no = await client.callTool({ name: "bash", arguments: { command: "touch v2-no.txt" } });
        assert.equal(no.isError, true, JSON.stringify(no));
        assert.match(no.content[0].text, /declined/);
        assert.equal(asked.length, 2);
      } finally {
        await client.close();
      }
    });
  }
}

/**
 * A 2026-07-28 client behind a round-robin "load balancer" over two gateways whose kernels
 * share one PostgreSQL database (MCP_BALANCED_URLS): every request may reach either, and the
 * session-free revision needs nothing more. harness_task runs through one gateway and its
 * transcript is read through the other.
 */
export async function runBalanced(urls) {
  await check(`sdk-v2 http ${MODERN}: two kernels on one database answer one client in turn`, async () => {
    const hits = urls.map(() => 0);
    let next = 0;
    const balanced = (_url, init) => {
      const i = next++ % urls.length;
      hits[i]++;
      return fetch(urls[i], init);
    };
    const transport = new StreamableHTTPClientTransport(new URL(urls[0]), { fetch: balanced });
    const client = new Client({ name: "superpi-conformance-v2", version: "1.0.0" }, { versionNegotiation: { mode: { pin: MODERN } } });
    await client.connect(transport);
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
      assert.equal(transport.sessionId, undefined);
      const r = await client.callTool({ name: "harness_task", arguments: { prompt: "answered behind a balancer" } });
      assert.ok(!r.isError, JSON.stringify(r));
      const id = r.structuredContent?.conversation_id;
      assert.ok(Number.isInteger(id), JSON.stringify(r));
      // The next requests alternate: each gateway reads the conversation the turn stored.
      for (let i = 0; i < urls.length; i++) {
        const read = await client.readResource({ uri: `superpi://conversation/${id}/transcript` });
        assert.match(read.contents[0].text, /answered behind a balancer/);
      }
      assert.ok(hits.every((n) => n > 0), `a gateway got no request: ${hits}`);
    } finally {
      await client.close();
    }
  });
}
