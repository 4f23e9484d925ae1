// JSON-RPC 2.0 compliance of a line-delimited server on stdio (superpi: `superpi rpc --stdio`),
// with a raw line client: id kinds echoed, notifications unanswered, batches (mixed, only
// notifications, empty, invalid), each error code. The generic checks use only an unknown
// method, so any JSON-RPC 2.0 line server can be checked. With TARGET_IS_SUPERPI=1 (and
// SUPERPI_BIN) superpi's own methods and error codes are checked too.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { check, done, isSuperpi, need, skip } from "../lib/report.mjs";

const command = need("RPC_COMMAND");
const superpi = isSuperpi();
const cwd = process.env.CONFORMANCE_WORKSPACE || process.cwd();
const children = new Set();
process.on("exit", () => {
  for (const pid of children) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
  }
});

/** A raw line client on a spawned server. */
class Lines {
  constructor(cmd, env = {}) {
    this.proc = spawn("sh", ["-c", `exec ${cmd}`], { cwd, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "ignore"], detached: true });
    children.add(this.proc.pid);
    this.queue = [];
    this.waiters = [];
    createInterface({ input: this.proc.stdout }).on("line", (line) => {
      let value;
      try {
        value = JSON.parse(line);
      } catch {
        value = { unparsable: line };
      }
      const w = this.waiters.shift();
      if (w) w(value);
      else this.queue.push(value);
    });
  }
  send(value) {
    this.proc.stdin.write(typeof value === "string" ? `${value}\n` : `${JSON.stringify(value)}\n`);
  }
  next(ms = 15_000) {
    if (this.queue.length) return Promise.resolve(this.queue.shift());
    return new Promise((ok, fail) => {
      const t = setTimeout(() => fail(new Error(`no line within ${ms} ms`)), ms);
      this.waiters.push((v) => {
        clearTimeout(t);
        ok(v);
      });
    });
  }
  /** Sends a request and returns its answer; notifications that arrive meanwhile are kept. */
  async call(method, params, id = ++Lines.ids) {
    this.send({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
    return this.until((m) => m.id === id && !("method" in m));
  }
  async until(pred, ms = 15_000) {
    const deadline = Date.now() + ms;
    const kept = [];
    for (;;) {
      const m = await this.next(Math.max(1, deadline - Date.now()));
      if (pred(m)) {
        this.queue.unshift(...kept);
        return m;
      }
      kept.push(m);
    }
  }
  close() {
    this.proc.stdin.end();
    try {
      process.kill(-this.proc.pid, "SIGKILL");
    } catch {}
    children.delete(this.proc.pid);
  }
}
Lines.ids = 1000;

const UNKNOWN = "conformance.no_such_method";
function isError(m, code, id) {
  assert.equal(m.jsonrpc, "2.0", JSON.stringify(m));
  assert.ok(!("result" in m), `a result beside the error: ${JSON.stringify(m)}`);
  assert.equal(typeof m.error?.message, "string", JSON.stringify(m));
  assert.equal(m.error.code, code, JSON.stringify(m));
  if (id !== undefined) assert.deepEqual(m.id, id);
}

const c = new Lines(command);

let alive = false;
await check("-32601 for an unknown method, with the request's id", async () => {
  const m = await c.call(UNKNOWN, {}, 1);
  alive = true;
  isError(m, -32601, 1);
});

if (!alive) {
  skip("every other check", "the server did not answer: nothing else can run");
  c.close();
  done();
}

for (const [kind, id] of [["string", "abc-1"], ["negative number", -7], ["fractional number", 1.5], ["zero", 0], ["null", null]]) {
  await check(`a ${kind} id is echoed exactly`, async () => {
    c.send({ jsonrpc: "2.0", id, method: UNKNOWN });
    const m = await c.until((x) => "id" in x && x.error?.code === -32601 && JSON.stringify(x.id) === JSON.stringify(id));
    isError(m, -32601, id);
  });
}

await check("a notification gets no answer (not even an error)", async () => {
  c.send({ jsonrpc: "2.0", method: UNKNOWN });
  c.send({ jsonrpc: "2.0", id: "after-notification", method: UNKNOWN });
  const first = await c.next();
  assert.equal(first.id, "after-notification", `answered the notification: ${JSON.stringify(first)}`);
  c.send({ jsonrpc: "2.0", id: "after-2", method: UNKNOWN });
  const second = await c.next();
  assert.equal(second.id, "after-2", `an extra line: ${JSON.stringify(second)}`);
});

await check("-32700 parse error with a null id, and the server keeps serving", async () => {
  c.send('{"jsonrpc": "2.0", "method": "x", "params": [');
  isError(await c.next(), -32700, null);
  isError(await c.call(UNKNOWN, {}, "still-alive"), -32601, "still-alive");
});

for (const [what, value] of [
  ['jsonrpc "1.0"', { jsonrpc: "1.0", id: 5, method: UNKNOWN }],
  ["no jsonrpc member", { id: 6, method: UNKNOWN }],
  ["a method that is not a string", { jsonrpc: "2.0", id: 7, method: 1 }],
  ["params that are a string", { jsonrpc: "2.0", id: 8, method: UNKNOWN, params: "x" }],
  ["an object id", { jsonrpc: "2.0", id: { a: 1 }, method: UNKNOWN }],
]) {
  await check(`-32600 invalid request: ${what}`, async () => {
    c.send(value);
    const m = await c.until((x) => x.error?.code === -32600 || x.error?.code === -32601);
    isError(m, -32600);
  });
}

await check("-32600 for an empty batch, one answer with a null id", async () => {
  c.send("[]");
  const m = await c.next();
  assert.ok(!Array.isArray(m), `an array: ${JSON.stringify(m)}`);
  isError(m, -32600, null);
});

await check("a batch of invalid entries gets an array of -32600 errors", async () => {
  c.send("[1, 2, 3]");
  const m = await c.next();
  assert.ok(Array.isArray(m), JSON.stringify(m));
  assert.equal(m.length, 3);
  for (const e of m) isError(e, -32600, null);
});

await check("a mixed batch: one answer per request, none for its notifications", async () => {
  c.send([
    { jsonrpc: "2.0", id: "b1", method: UNKNOWN },
    { jsonrpc: "2.0", method: UNKNOWN },
    { jsonrpc: "2.0", id: "b2", method: UNKNOWN },
    { foo: "bar" },
  ]);
  const m = await c.next();
  assert.ok(Array.isArray(m), JSON.stringify(m));
  assert.equal(m.length, 3, JSON.stringify(m));
  const byId = Object.fromEntries(m.map((e) => [JSON.stringify(e.id), e]));
  isError(byId['"b1"'], -32601, "b1");
  isError(byId['"b2"'], -32601, "b2");
  isError(byId.null, -32600, null);
});

await check("a batch of notifications only gets no answer at all", async () => {
  c.send([{ jsonrpc: "2.0", method: UNKNOWN }, { jsonrpc: "2.0", method: UNKNOWN }]);
  c.send({ jsonrpc: "2.0", id: "after-batch", method: UNKNOWN });
  const m = await c.next();
  assert.equal(m.id, "after-batch", `answered the batch: ${JSON.stringify(m)}`);
});

if (!superpi) {
  skip("superpi methods and error codes (-32602, -32004, -32010, -32001, -32003, -32603)", "needs superpi rpc");
  c.close();
  done();
}

const bin = need("SUPERPI_BIN");
const q = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

await check("a result for a valid call: harness.list", async () => {
  const m = await c.call("harness.list");
  assert.equal(m.jsonrpc, "2.0");
  assert.ok(!("error" in m), JSON.stringify(m));
  assert.ok(m.result.harnesses.some((h) => h.id === "superpi-code"));
});

await check("params by position (an array) work like by name", async () => {
  const open = await c.call("session.open", {});
  const id = open.result.conversation_id;
  const byName = await c.call("session.history", { conversation_id: id });
  const byPos = await c.call("session.history", [id]);
  assert.deepEqual(byPos.result, byName.result);
});

await check("-32602 invalid params (an unknown field, a wrong type)", async () => {
  isError(await c.call("session.open", { no_such_field: 1 }), -32602);
  isError(await c.call("session.history", { conversation_id: "seven" }), -32602);
});

await check("-32004 not found (no such conversation)", async () => {
  isError(await c.call("session.history", { conversation_id: 987654 }), -32004);
});

await check("-32010 provider (an unknown model)", async () => {
  isError(await c.call("session.open", { model: "no-such-model-anywhere" }), -32010);
});

await check("a turn: watch, submit, numbered batches, ack, turn_completed", async () => {
  const open = await c.call("session.open", {});
  const id = open.result.conversation_id;
  const watch = await c.call("session.watch", { conversation_id: id });
  const w = watch.result.watch;
  const sub = await c.call("session.submit", { conversation_id: id, prompt: "@deltas 20\nhello over rpc" });
  assert.equal(typeof sub.result.turn_id, "number");
  const events = [];
  let batch = 0;
  while (!events.some((e) => e.type === "turn_completed")) {
    const n = await c.until((m) => m.method === "session.event" && m.params.watch === w);
    assert.ok(!("id" in n), "an event notification with an id");
    assert.equal(n.params.batch, batch + 1, "batches are not numbered 1, 2, 3, ...");
    batch = n.params.batch;
    events.push(...n.params.events);
    c.send({ jsonrpc: "2.0", method: "session.ack", params: { watch: w, batch } });
  }
  const done = events.find((e) => e.type === "turn_completed");
  assert.equal(done.stop_reason, "end_turn");
  assert.match(done.result, /hello over rpc/);
  assert.equal(events.filter((e) => e.type === "text_delta").map((e) => e.delta).join(""), done.result);
  const unwatch = await c.call("session.unwatch", { watch: w });
  assert.equal(unwatch.result.unwatched, true);
});

await check("-32001 unauthorized and -32003 forbidden (with SUPERPI_TOKENS)", async () => {
  const t = new Lines(`${q(bin)} rpc --stdio`, { SUPERPI_TOKENS: "tok-a,tok-b" });
  try {
    isError(await t.call("harness.list"), -32001);
    isError(await t.call("auth.login", { token: "wrong" }), -32001);
    const ok = await t.call("auth.login", { token: "tok-a" });
    assert.equal(ok.result.auth, true, JSON.stringify(ok));
    isError(await t.call("auth.login", { token: "tok-b" }), -32003);
    assert.ok((await t.call("harness.list")).result);
  } finally {
    t.close();
  }
});

await check("-32603 internal error when the kernel cannot be reached", async () => {
  // A runtime directory under a regular file: no socket can be reached or created there. The
  // autostarted kernel exits saying why, and the frontend answers at once, although the run's
  // own kernel (another runtime directory, the same data directory) holds the lock.
  const broken = join(cwd, "hello.txt", "run");
  const t = new Lines(`${q(bin)} rpc --stdio`, { SUPERPI_RUNTIME_DIR: broken });
  try {
    t.send({ jsonrpc: "2.0", id: "k", method: "session.list", params: {} });
    isError(await t.next(40_000), -32603, "k");
  } finally {
    t.close();
  }
}, { timeoutMs: 45_000 });

await check("-32600 with data.limit for a line over --max-line-bytes, then serving on", async () => {
  const t = new Lines(`${q(bin)} rpc --stdio --max-line-bytes 1024`);
  try {
    t.send({ jsonrpc: "2.0", id: 1, method: UNKNOWN, params: { pad: "x".repeat(4096) } });
    const m = await t.next();
    isError(m, -32600, null);
    assert.equal(m.error.data?.limit, 1024, JSON.stringify(m));
    isError(await t.call(UNKNOWN, {}, 2), -32601, 2);
  } finally {
    t.close();
  }
});

c.close();
done();
