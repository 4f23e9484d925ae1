// The reporting side of every client script: one JSON line per check on stdout, read by the
// Rust runner (conformance/src/report.rs). Checks run one after another; one that throws or
// outlives its deadline fails with the reason, and the next one still runs.

import { inspect } from "node:util";

let failures = 0;

function emit(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** Runs `body` as the check `name`; a thrown error (or the deadline) fails it. Returns
 * whether it passed. */
export async function check(name, body, { timeoutMs = 30_000 } = {}) {
  let timer;
  try {
    await Promise.race([
      Promise.resolve().then(body),
      new Promise((_, fail) => {
        timer = setTimeout(() => fail(new Error(`no result within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    emit({ check: name, ok: true });
    return true;
  } catch (e) {
    failures += 1;
    emit({ check: name, ok: false, reason: reason(e) });
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** A check that does not apply to this target, shown but not counted. */
export function skip(name, why) {
  emit({ check: name, skip: why });
}

/** A check that cannot run because an earlier one failed: shown with that reason, not counted
 * (the earlier failure is). */
export function blocked(name, because) {
  emit({ check: name, blocked: because });
}

/** A check decided without running code (e.g. from a collected list of problems). */
export function verdict(name, problems) {
  if (problems.length === 0) emit({ check: name, ok: true });
  else {
    failures += 1;
    emit({ check: name, ok: false, reason: problems.slice(0, 5).join("\n") + (problems.length > 5 ? `\n(+${problems.length - 5} more)` : "") });
  }
}

function reason(e) {
  if (e?.name === "AssertionError" || e?.code === "ERR_ASSERTION") {
    const msg = String(e.message).split("\n").slice(0, 12).join("\n");
    return msg.length > 1500 ? `${msg.slice(0, 1500)}…` : msg;
  }
  const text = e instanceof Error ? `${e.name}: ${e.message}` : inspect(e, { depth: 4 });
  return text.length > 1500 ? `${text.slice(0, 1500)}…` : text;
}

/** True when the target is superpi's own frontend (so the mock model's directives work). */
export const isSuperpi = (name = "TARGET_IS_SUPERPI") => process.env[name] === "1";

/** Ends the script: exit status 1 when a check failed. */
export function done() {
  process.exit(failures ? 1 : 0);
}

/** A required environment variable. */
export function need(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set: run this script through \`cargo run -p superpi-conformance\``);
    process.exit(2);
  }
  return value;
}
