#!/usr/bin/env bash
# OpenCode against `superpi mcp`, for real and offline.
#
#   frontends/mcp/scripts/opencode-check.sh [SUPERPI_BIN]
#
# 1. Installs `opencode-ai` from npm into a temporary directory outside the repository
#    (reused from $OPENCODE_DIR when that holds node_modules/.bin/opencode already).
# 2. Writes a project with the documented opencode.json entry for superpi, under a temporary
#    HOME and XDG dirs, OPENCODE_DISABLE_MODELS_FETCH=1, and npm pointed at a closed local
#    port (NPM_CONFIG_REGISTRY=http://127.0.0.1:9/) for OpenCode's background plugin install.
# 3. `opencode mcp list` must show superpi connected.
# 4. `opencode run` with a scripted OpenAI-compatible model on 127.0.0.1 (scripted_model.py):
#    the model must be offered superpi's tools under OpenCode's names (superpi_read, ...),
#    asks for superpi_read of a file, and the answer must carry that file's content read
#    through superpi (its numbered-line format).
#
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exits non-zero on a failure.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
bin="${1:-$repo/target/debug/superpi}"
[ -x "$bin" ] || { echo "no superpi binary at $bin (cargo build -p superpi-cli)"; exit 2; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

work="$(mktemp -d /tmp/superpi-opencode-XXXXXX)"
model_pid=""
cleanup() {
    [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null
    SUPERPI_DATA_DIR="$work/sp/data" SUPERPI_CONFIG_DIR="$work/sp/config" SUPERPI_RUNTIME_DIR="$work/sp/run" \
        "$bin" kernel stop >/dev/null 2>&1
    [ -z "${KEEP:-}" ] && rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
check() { # NAME CONDITION-EXIT-CODE DETAIL
    if [ "$2" -eq 0 ]; then
        echo "PASS $1"; passed=$((passed + 1))
    else
        echo "FAIL $1: $3"; failed=$((failed + 1))
    fi
}

# 1. OpenCode from npm, outside the repository.
oc_dir="${OPENCODE_DIR:-$work/opencode}"
if [ ! -x "$oc_dir/node_modules/.bin/opencode" ]; then
    mkdir -p "$oc_dir"
    (cd "$oc_dir" && npm install --no-audit --no-fund --loglevel=error opencode-ai >"$work/npm.log" 2>&1) ||
        { echo "npm install opencode-ai failed:"; tail -20 "$work/npm.log"; exit 2; }
fi
opencode="$oc_dir/node_modules/.bin/opencode"
echo "opencode $("$opencode" --version 2>/dev/null)"

# 2. An offline, private OpenCode with superpi as an MCP server.
mkdir -p "$work"/{home,xdg/config,xdg/data,xdg/cache,xdg/state,project,sp}
export HOME="$work/home" XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data"
export XDG_CACHE_HOME="$work/xdg/cache" XDG_STATE_HOME="$work/xdg/state"
export OPENCODE_DISABLE_MODELS_FETCH=1 NPM_CONFIG_REGISTRY=http://127.0.0.1:9/
export SUPERPI_DATA_DIR="$work/sp/data" SUPERPI_CONFIG_DIR="$work/sp/config" SUPERPI_RUNTIME_DIR="$work/sp/run"
unset OPENAI_API_KEY ANTHROPIC_API_KEY GEMINI_API_KEY OPENAI_BASE_URL
project="$work/project"
echo "a line only superpi read" >"$project/hello.txt"

python3 "$here/scripted_model.py" "$work/model.port" "$work/model.log" superpi_read '{"path": "hello.txt"}' &
model_pid=$!
for _ in $(seq 100); do [ -s "$work/model.port" ] && break; sleep 0.1; done
port="$(cat "$work/model.port" 2>/dev/null)"
[ -n "$port" ] || { echo "the scripted model did not start"; exit 2; }

cat >"$project/opencode.json" <<EOF
{
  "\$schema": "https://opencode.ai/config.json",
  "mcp": {
    "superpi": { "type": "local", "command": ["$bin", "mcp"], "enabled": true }
  },
  "provider": {
    "scripted": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Scripted",
      "options": { "baseURL": "http://127.0.0.1:$port/v1", "apiKey": "none" },
      "models": { "scripted": { "name": "Scripted", "tool_call": true } }
    }
  },
  "model": "scripted/scripted",
  "share": "disabled",
  "autoupdate": false
}
EOF
cd "$project" || exit 2

# 3. opencode mcp list
list="$(timeout 120 "$opencode" mcp list 2>&1)"
echo "$list" | grep -q "superpi.*connected"
check "opencode mcp list shows superpi connected" $? "$list"

# 4. OpenCode calls superpi's tools.
out="$(timeout 300 "$opencode" run --model scripted/scripted "read hello.txt with superpi" 2>"$work/run.err")"
status=$?
check "opencode run exits 0" $status "$(tail -20 "$work/run.err")"
python3 - "$work/model.log" <<'PY'
import json, sys
names = set()
for line in open(sys.argv[1]):
    for tool in json.loads(line).get("tools", []):
        names.add(tool.get("function", {}).get("name"))
want = {"superpi_" + n for n in ["read", "write", "edit", "bash", "grep", "find", "ls", "harness_task"]}
missing = want - names
print("offered superpi tools:", " ".join(sorted(n for n in names if n and n.startswith("superpi_"))))
sys.exit(1 if missing else 0)
PY
check "the model is offered superpi_read ... superpi_harness_task" $? "see the tool list above"
echo "$out" | grep -q "1.a line only superpi read"
check "the answer carries hello.txt as superpi's read returned it" $? "$out $(tail -20 "$work/run.err")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
