// Runs the official OpenAI client (Chat Completions and the Responses API) and the AI SDK's
// OpenAI-compatible provider against the gateway at GATEWAY_URL (e.g. http://127.0.0.1:4000). Exits 1 when a check fails.
import OpenAI from "openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, streamText } from "ai";

const base = process.env.GATEWAY_URL;
if (!base) {
  console.error("set GATEWAY_URL");
  process.exit(2);
}
const failures = [];
function check(name, ok, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : `: ${JSON.stringify(detail)}`}`);
  if (!ok) failures.push(name);
}

// The official OpenAI client.
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: "local", maxRetries: 0 });

const models = await openai.models.list();
const ids = models.data.map((m) => m.id);
check("openai: models.list has the harnesses", ids.includes("superpi-code") && ids.includes("superpi-planner"), ids);

const whole = await openai.chat.completions.create({
  model: "superpi-code",
  messages: [{ role: "user", content: "hello from openai" }],
});
check("openai: whole completion", whole.choices[0].message.content === "hello from openai", whole);
check("openai: whole completion finish_reason", whole.choices[0].finish_reason === "stop", whole);
check("openai: whole completion usage", typeof whole.usage?.total_tokens === "number", whole.usage);

const stream = await openai.chat.completions.create({
  model: "superpi-code",
  stream: true,
  stream_options: { include_usage: true },
  messages: [{ role: "user", content: "@think pondering\nstreamed by openai" }],
});
let content = "";
let reasoning = "";
const finishes = [];
let usages = 0;
const chunkIds = new Set();
for await (const chunk of stream) {
  chunkIds.add(chunk.id);
  for (const choice of chunk.choices) {
    content += choice.delta?.content ?? "";
    reasoning += choice.delta?.reasoning_content ?? "";
    if (choice.finish_reason) finishes.push(choice.finish_reason);
  }
  if (chunk.usage) usages += 1;
}
check("openai: streamed content", content === "streamed by openai", content);
check("openai: streamed reasoning_content", reasoning.includes("pondering"), reasoning);
check("openai: one finish_reason", finishes.length === 1 && finishes[0] === "stop", finishes);
check("openai: usage once", usages === 1, usages);
check("openai: one id", chunkIds.size === 1, [...chunkIds]);

try {
  await openai.chat.completions.create({ model: "no-such-model-anywhere", messages: [{ role: "user", content: "x" }] });
  check("openai: unknown model is an error", false, "no error");
} catch (err) {
  check("openai: unknown model is a 404 model_not_found", err.status === 404 && err.code === "model_not_found", {
    status: err.status,
    code: err.code,
  });
}

// Structured output: `response_format` json_schema, read back by the client's own parser; an
// answer refused twice is an APIError with OpenAI's `model_error` type.
const countFormat = {
  type: "json_schema",
  json_schema: {
    name: "count",
    strict: true,
    schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false },
  },
};
const parsed = await openai.chat.completions.parse({
  model: "superpi-code",
  response_format: countFormat,
  messages: [{ role: "user", content: '@answer three\n@answer {"n": 4}' }],
});
check("openai: chat.completions.parse with a json_schema", parsed.choices[0].message.parsed?.n === 4, parsed.choices[0].message);
try {
  await openai.chat.completions.create({
    model: "superpi-code",
    response_format: countFormat,
    messages: [{ role: "user", content: '@answer {"n": "x"}\n@answer {"n": "y"}' }],
  });
  check("openai: a schema refused twice is an error", false, "no error");
} catch (err) {
  check("openai: a schema refused twice is a 500 model_error", err.status === 500 && err.type === "model_error", {
    status: err.status,
    type: err.type,
  });
}
const parsedResponse = await openai.responses.parse({
  model: "superpi-code",
  input: '@answer {"n": 5}',
  text: { format: { type: "json_schema", name: "count", strict: true, schema: countFormat.json_schema.schema } },
});
check("openai: responses.parse with text.format", parsedResponse.output_parsed?.n === 5, parsedResponse.output);

// The Responses API through the same client: whole, streamed (raw events), and the SDK's own
// accumulator (`responses.stream`, which throws on an event that does not fit its snapshot).
const response = await openai.responses.create({ model: "superpi-code", input: "hello from responses" });
check("openai: responses.create", response.status === "completed" && response.output_text === "hello from responses", response);
check("openai: responses usage", response.usage?.total_tokens === response.usage?.input_tokens + response.usage?.output_tokens, response.usage);
const events = [];
for await (const e of await openai.responses.create({ model: "superpi-code", input: "streamed responses", stream: true })) events.push(e);
check("openai: responses events numbered from 0", events.every((e, n) => e.sequence_number === n), events.map((e) => e.sequence_number));
check("openai: responses events from created to completed", events[0]?.type === "response.created" && events.at(-1)?.type === "response.completed", events.map((e) => e.type));
const deltas = events.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
check("openai: responses text deltas", deltas === "streamed responses", deltas);
const accumulated = await openai.responses.stream({ model: "superpi-code", input: '@think pondering\n@tool ls {"path": "."}' }).finalResponse();
const summary = accumulated.output.filter((i) => i.type === "reasoning").flatMap((i) => i.summary.map((p) => p.text)).join("");
check("openai: responses.stream reasoning and server-side tools", summary.includes("pondering") && summary.includes("[tool] ls"), accumulated.output);
check("openai: responses.stream has no function calls", accumulated.output.every((i) => i.type !== "function_call"), accumulated.output);
const continued = await openai.responses.create({ model: "superpi-code", previous_response_id: response.id, input: "and again" });
check("openai: previous_response_id continues", continued.output_text === "and again" && continued.previous_response_id === response.id, continued);

// The AI SDK's OpenAI-compatible provider, as OpenCode configures it.
const superpi = createOpenAICompatible({ name: "superpi", baseURL: `${base}/v1`, apiKey: "local", includeUsage: true });

const generated = await generateText({ model: superpi("superpi-code"), prompt: "hello from the ai sdk", maxRetries: 0 });
check("ai-sdk: generateText", generated.text === "hello from the ai sdk", generated.text);
check("ai-sdk: generateText finishReason", generated.finishReason === "stop", generated.finishReason);

const streamed = streamText({
  model: superpi("superpi-code"),
  prompt: "@think considering\n@tool ls {\"path\": \".\"}",
  maxRetries: 0,
});
let text = "";
let thought = "";
let toolCalls = 0;
let errors = [];
for await (const part of streamed.fullStream) {
  if (part.type === "text-delta") text += part.text;
  if (part.type === "reasoning-delta") thought += part.text;
  if (part.type === "tool-call") toolCalls += 1;
  if (part.type === "error") errors.push(String(part.error));
}
check("ai-sdk: streamText has no errors", errors.length === 0, errors);
check("ai-sdk: reasoning arrives as reasoning", thought.includes("considering") && thought.includes("[tool] ls"), thought);
check("ai-sdk: the server ran the tool", text.startsWith("The tools answered."), text);
check("ai-sdk: no client tool calls", toolCalls === 0, toolCalls);
check("ai-sdk: streamText finishReason", (await streamed.finishReason) === "stop", await streamed.finishReason);
const usage = await streamed.usage;
check("ai-sdk: streamText usage", typeof usage.outputTokens === "number", usage);

// A failed turn reaches the AI SDK (what OpenCode shows) as an error part with its message.
const failed = streamText({ model: superpi("superpi-code"), prompt: "@fail the model broke", maxRetries: 0 });
const failedErrors = [];
for await (const part of failed.fullStream) {
  if (part.type === "error") failedErrors.push(String(part.error?.message ?? part.error));
}
check("ai-sdk: a failed turn is an error part", failedErrors.some((e) => e.includes("the model broke")), failedErrors);

if (failures.length) {
  console.error(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log("all checks passed");
