"""OpenAI-compatible conformance with the official Python client (`openai`, pinned in
conformance/requirements.txt), with strict response validation on: every response, chunk and
Responses API event is parsed into the client's pydantic models, so a value outside the API's
types fails.

Reads OPENAI_URL, OPENAI_KEY, OPENAI_MODEL, TARGET_IS_SUPERPI and OPENAI_AUTH_URL /
OPENAI_AUTH_KEY like check.mjs, and reports one JSON line per check (see lib/report.mjs).
"""

import json
import os
import sys
import traceback

import openai
from openai import OpenAI

BASE = os.environ["OPENAI_URL"]
MODEL = os.environ.get("OPENAI_MODEL") or "superpi-code"
SUPERPI = os.environ.get("TARGET_IS_SUPERPI") == "1"
failures = 0


def client(base=BASE, key=None, **kw):
    return OpenAI(
        base_url=f"{base}/v1",
        api_key=key or os.environ.get("OPENAI_KEY") or "local",
        max_retries=0,
        timeout=60,
        _strict_response_validation=True,
        **kw,
    )


def check(name):
    def run(body):
        global failures
        try:
            body()
            line = {"check": name, "ok": True}
        except Exception as e:  # every failure is a row, the next check still runs
            failures += 1
            why = f"{type(e).__name__}: {e}" if not isinstance(e, AssertionError) else str(e) or traceback.format_exc(limit=2)
            line = {"check": name, "ok": False, "reason": why[:1500]}
        print(json.dumps(line), flush=True)

    return run


def skip(name, why):
    print(json.dumps({"check": name, "skip": why}), flush=True)


def expect(cls, status, call):
    try:
        call()
    except cls as e:
        if status is not None:
            assert e.status_code == status, f"status {e.status_code}"
        return e
    except Exception as e:
        raise AssertionError(f"got {type(e).__name__}: {e}") from e
    raise AssertionError(f"no {cls.__name__}")


c = client()
msg = lambda text: [{"role": "user", "content": text}]  # noqa: E731


@check("python: models.list (strict)")
def _():
    models = c.models.list().data
    assert models, "no models"
    if SUPERPI:
        assert any(m.id == "superpi-code" for m in models)


@check("python: a whole completion (strict)")
def _():
    r = c.chat.completions.create(model=MODEL, messages=msg("hello from python"))
    assert r.choices[0].message.role == "assistant"
    if SUPERPI:
        assert r.choices[0].message.content == "hello from python", r.choices[0].message.content


@check("python: a stream with usage (strict)")
def _():
    chunks = list(c.chat.completions.create(model=MODEL, messages=msg("streamed by python"), stream=True, stream_options={"include_usage": True}))
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    finishes = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert len(finishes) == 1, finishes
    assert chunks[-1].usage is not None and chunks[-1].choices == [], "no usage chunk last"
    if SUPERPI:
        assert text == "streamed by python", text


@check("python: NotFoundError (404) for an unknown model")
def _():
    expect(openai.NotFoundError, 404, lambda: c.chat.completions.create(model="no-such-model-anywhere", messages=msg("x")))


@check("python: BadRequestError (400) for a request without messages")
def _():
    expect(openai.BadRequestError, 400, lambda: c.chat.completions.create(model=MODEL, messages=[]))


# ---- The Responses API: every response and event parsed into the client's models (strict).


def response_text(r):
    return "".join(c.text for i in r.output if i.type == "message" for c in i.content if c.type == "output_text")


@check("python: responses.create, a whole response (strict)")
def _():
    r = c.responses.create(model=MODEL, input="hello from python responses")
    assert r.object == "response" and r.status == "completed", r
    assert r.usage is not None and r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens, r.usage
    if SUPERPI:
        assert r.output_text == "hello from python responses", r.output_text


@check("python: responses.create stream, every event parsed (strict)")
def _():
    events = list(c.responses.create(model=MODEL, input="streamed by python responses", stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events))), "sequence numbers"
    assert events[0].type == "response.created" and events[-1].type == "response.completed", [e.type for e in events]
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == response_text(events[-1].response), deltas
    assert events[-1].response.usage is not None
    if SUPERPI:
        assert deltas == "streamed by python responses", deltas


@check("python: responses.stream, the SDK's accumulator (strict)")
def _():
    prompt = '@think pondering\n@tool ls {"path": "."}' if SUPERPI else "accumulated by python"
    with c.responses.stream(model=MODEL, input=prompt) as stream:
        for _event in stream:
            pass
        r = stream.get_final_response()
    assert r.status == "completed", r.status
    if SUPERPI:
        summary = "".join(p.text for i in r.output if i.type == "reasoning" for p in i.summary)
        assert "pondering" in summary and "[tool] ls" in summary, summary
        assert "hello.txt" in r.output_text, r.output_text


@check("python: responses, BadRequestError (400) for an unknown previous_response_id")
def _():
    e = expect(openai.BadRequestError, 400, lambda: c.responses.create(model=MODEL, input="x", previous_response_id="resp_no_such_response"))
    assert e.code == "previous_response_not_found", e.code
    assert e.param == "previous_response_id", e.param


MOCK = ["python: a failed turn, streamed: APIError from the error object (strict)", "python: a failed turn, whole: InternalServerError 500 (strict)", "python: AuthenticationError (401) for a wrong key", "python: PermissionDeniedError (403) for a foreign browser Origin", "python: responses, previous_response_id continues the conversation (strict)", "python: responses, a failed turn streams response.failed (strict)"]
if not SUPERPI:
    for name in MOCK:
        skip(name, "needs superpi's mock model")
    sys.exit(1 if failures else 0)


@check(MOCK[0])
def _():
    seen = []

    def read():
        for chunk in c.chat.completions.create(model=MODEL, messages=msg("@fail the model broke"), stream=True):
            seen.append(chunk)

    e = expect(openai.APIError, None, read)
    assert "the model broke" in e.message, e.message
    assert seen and seen[0].choices[0].delta.role == "assistant", "no role chunk before the error"
    assert all(ch.finish_reason is None for chunk in seen for ch in chunk.choices), "a finish_reason before the error"


@check(MOCK[1])
def _():
    e = expect(openai.InternalServerError, 500, lambda: c.chat.completions.create(model=MODEL, messages=msg("@fail the model broke")))
    assert "the model broke" in e.message, e.message
    assert e.code == "turn_failed", e.code


@check(MOCK[2])
def _():
    url = os.environ["OPENAI_AUTH_URL"]
    expect(openai.AuthenticationError, 401, lambda: client(url, "not-the-key").chat.completions.create(model=MODEL, messages=msg("x")))
    r = client(url, os.environ["OPENAI_AUTH_KEY"]).chat.completions.create(model=MODEL, messages=msg("with the key"))
    assert r.choices[0].message.content == "with the key"


@check(MOCK[3])
def _():
    browser = client(default_headers={"Origin": "https://attacker.example"})
    expect(openai.PermissionDeniedError, 403, lambda: browser.chat.completions.create(model=MODEL, messages=msg("x")))


@check(MOCK[4])
def _():
    one = c.responses.create(model=MODEL, instructions="be brief", input="my name is Ada")
    two = c.responses.create(model=MODEL, previous_response_id=one.id, input=[{"role": "user", "content": [{"type": "input_text", "text": "and again"}]}])
    assert two.previous_response_id == one.id
    assert two.output_text == "and again", two.output_text


@check(MOCK[5])
def _():
    events = list(c.responses.create(model=MODEL, input="@fail the model broke", stream=True))
    end = events[-1]
    assert end.type == "response.failed", [e.type for e in events]
    assert end.response.status == "failed" and end.response.error.code == "server_error", end.response
    assert "the model broke" in end.response.error.message, end.response.error


sys.exit(1 if failures else 0)
