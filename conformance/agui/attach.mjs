// Attaches @ag-ui/client's HttpAgent to a thread of a running `superpi agui` (the GET events
// route, through the client's whole pipeline: schemas and verifier, as check.mjs's attach
// check does) and prints, as one JSON line, the messages the client holds once the opening
// run has finished. frontends/agui/tests/e2e.rs runs it: AGUI_BASE (http://ADDR), AGUI_THREAD.

import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

process.env.SUPPRESS_TRANSFORMATION_WARNINGS ??= "true";
const base = process.env.AGUI_BASE;
const thread = process.env.AGUI_THREAD;
if (!base || !thread) throw new Error("AGUI_BASE and AGUI_THREAD are required");

class Attach extends HttpAgent {
  requestInit() {
    return { method: "GET", headers: { Accept: "text/event-stream" }, signal: this.abortController.signal };
  }
}

const agent = new Attach({ url: `${base}/agui/v1/sessions/${thread}/events`, threadId: thread });
const events = [];
await agent.runAgent({}, {
  onEvent: ({ event }) => void events.push(event),
  onRunFinishedEvent: () => agent.abortRun(),
});
for (const event of events) EventSchema.parse(event);
const types = events.map((e) => e.type);
// Aborting the open stream makes the client add a RUN_ERROR of its own after ours.
const ours = types.slice(0, types.indexOf("RUN_FINISHED") + 1);
const expected = ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"];
if (JSON.stringify(ours) !== JSON.stringify(expected)) throw new Error(`opening events: ${types.join(",")}`);
console.log(JSON.stringify(agent.messages.map((m) => ({ role: m.role, content: m.content ?? null }))));
