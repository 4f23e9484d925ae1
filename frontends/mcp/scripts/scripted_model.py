"""A scripted OpenAI-compatible chat model for the OpenCode check, on 127.0.0.1 only.

First turn: it asks for one tool call (name and JSON arguments from argv). Once the request
carries that tool's result, it answers "TOOL RESULT: <the result>". It records every request
body (one JSON per line) in the log file, so the check can see which tools OpenCode offered.

usage: scripted_model.py PORT_FILE LOG_FILE TOOL_NAME TOOL_ARGS_JSON
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT_FILE, LOG_FILE, TOOL, ARGS = sys.argv[1:5]


def chunk(delta, finish=None):
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        with open(LOG_FILE, "a") as log:
            log.write(json.dumps(request) + "\n")
        results = [m for m in request.get("messages", []) if m.get("role") == "tool"]
        offered = [t.get("function", {}).get("name") for t in request.get("tools", [])]
        if results:
            content = results[-1].get("content")
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
            events = [chunk({"role": "assistant", "content": "TOOL RESULT: " + str(content)}), chunk({}, "stop")]
        elif TOOL in offered:
            call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": TOOL, "arguments": ARGS}}
            events = [chunk({"role": "assistant", "tool_calls": [call]}), chunk({}, "tool_calls")]
        else:
            # A side request (a title, a summary) or a request without the tool.
            events = [chunk({"role": "assistant", "content": "scripted title"}), chunk({}, "stop")]
        if request.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for event in events:
                self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        else:
            message = {"role": "assistant", "content": None}
            for event in events:
                delta = event["choices"][0]["delta"]
                if "content" in delta:
                    message["content"] = delta["content"]
                if "tool_calls" in delta:
                    message["tool_calls"] = delta["tool_calls"]
            finish = events[-1]["choices"][0]["finish_reason"]
            body = json.dumps({
                "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": "scripted",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
