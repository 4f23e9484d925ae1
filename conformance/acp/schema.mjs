// Validates ACP messages against the JSON schema shipped with @agentclientprotocol/sdk
// (schema/v1/schema.json): the envelope against the schema's root, and params / results
// against the type of their method (the method → type map is read from the schema itself).

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

// The package's exports hide package.json: find it from the entry point it does export.
let sdkDir = dirname(fileURLToPath(import.meta.resolve("@agentclientprotocol/sdk")));
while (!sdkDir.endsWith("sdk")) sdkDir = dirname(sdkDir);
export const schemaPath = join(sdkDir, "schema/v1/schema.json");
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
schema.$id = "acp";

const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
addFormats(ajv);
// The schema's integer formats (from the Rust types it is generated from).
for (const [name, bits, signed] of [["uint8", 8, false], ["uint16", 16, false], ["uint32", 32, false], ["uint64", 64, false], ["int32", 32, true], ["int64", 64, true], ["uint", 64, false]]) {
  const min = signed ? -(2 ** (bits - 1)) : 0;
  const max = signed ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
  ajv.addFormat(name, { type: "number", validate: (n) => Number.isInteger(n) && n >= min && n <= max });
}
ajv.addSchema(schema);
const root = ajv.getSchema("acp");

/** method → { request: def name, response: def name } from the response unions' descriptions. */
const byMethod = {};
for (const union of ["AgentResponse", "ClientResponse"]) {
  for (const item of schema.$defs[union].anyOf[0].properties.result.anyOf) {
    const method = /for a `([^`]+)` request/.exec(item.description ?? "")?.[1];
    if (method) byMethod[method] = { request: item.title.replace(/Response$/, "Request"), response: item.title };
  }
}
const notifications = { "session/update": "SessionNotification", "session/cancel": "CancelNotification" };

function validate(def, value) {
  const fn = ajv.getSchema(`acp#/$defs/${def}`);
  if (!fn) return [`the schema has no ${def}`];
  return fn(value) ? [] : [`${def}: ${explain(fn.errors)}`];
}

/** The errors of the union variant the value meant (the one whose tag matched), briefly. */
function explain(errors) {
  const branch = (e) => /^(.*?\/(?:oneOf|anyOf)\/\d+)/.exec(e.schemaPath)?.[1] ?? "";
  const wrongTag = new Set(errors.filter((e) => e.keyword === "const" || e.keyword === "enum").map(branch));
  const meant = errors.filter((e) => !wrongTag.has(branch(e)) && e.keyword !== "oneOf" && e.keyword !== "anyOf");
  const shown = (meant.length ? meant : errors).slice(0, 3);
  return shown.map((e) => `${e.instancePath || "/"} ${e.message}${e.params && e.keyword !== "type" ? ` ${JSON.stringify(e.params)}` : ""}`).join("; ");
}

/**
 * Checks a recorded exchange: `log` is a list of [direction ("in" from the agent, "out" to it),
 * message]. Returns a list of problems, each naming the message.
 */
export function validateExchange(log, deliberate = []) {
  const problems = [];
  const pending = { in: new Map(), out: new Map() }; // requests by id, per sender
  for (const [dir, msg] of log) {
    const where = `${dir === "in" ? "agent→client" : "client→agent"} ${JSON.stringify(msg).slice(0, 160)}`;
    const add = (errs) => errs.forEach((e) => problems.push(`${e} in ${where}`));
    if (!root(msg)) add((root.errors ?? []).slice(0, 3).map((e) => `root${e.instancePath} ${e.message}`));
    if (msg.jsonrpc !== "2.0") add(["jsonrpc is not \"2.0\""]);
    if (typeof msg.method === "string" && "id" in msg) {
      pending[dir].set(JSON.stringify(msg.id), msg.method);
      const types = byMethod[msg.method];
      if (types) add(validate(types.request, msg.params));
      else if (!msg.method.startsWith("_") && !deliberate.includes(msg.method)) add([`unknown method ${msg.method}`]);
    } else if (typeof msg.method === "string") {
      const type = notifications[msg.method];
      if (type) add(validate(type, msg.params));
      else if (!msg.method.startsWith("_")) add([`unknown notification ${msg.method}`]);
    } else {
      const other = dir === "in" ? "out" : "in";
      const method = pending[other].get(JSON.stringify(msg.id));
      if (method === undefined && msg.id !== null) add(["a response to no request"]);
      pending[other].delete(JSON.stringify(msg.id));
      if ("result" in msg && "error" in msg) add(["both result and error"]);
      if ("result" in msg && method && byMethod[method]) add(validate(byMethod[method].response, msg.result));
      if ("error" in msg) add(validate("Error", msg.error));
    }
  }
  return problems;
}
