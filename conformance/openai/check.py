"""OpenAI-compatible conformance with the official Python client (`openai`, pinned in
conformance/requirements.txt), with strict response validation on: every response and chunk
is parsed into the client's pydantic models, so a value outside the API's types fails.

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


MOCK = ["python: a failed turn, streamed: APIError from the error object (strict)", "python: a failed turn, whole: InternalServerError 500 (strict)", "python: AuthenticationError (401) for a wrong key", "python: PermissionDeniedError (403) for a foreign browser Origin"]
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


sys.exit(1 if failures else 0)
