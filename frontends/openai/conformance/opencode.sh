#!/usr/bin/env bash
# OpenCode itself against a running gateway: `GATEWAY_URL=http://127.0.0.1:4000 ./opencode.sh`.
# Installs opencode-ai (pinned) into a temporary directory, configures the superpi provider as
# the gateway's README shows, runs one prompt and checks the mock model's echo comes back.
# Not part of `cargo test`: it downloads OpenCode's binary package (~100 MB) from npm.
set -euo pipefail
: "${GATEWAY_URL:?set GATEWAY_URL, e.g. http://127.0.0.1:4000}"
VERSION="${OPENCODE_VERSION:-1.18.33}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
(cd "$dir" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error "opencode-ai@$VERSION" >/dev/null)
bin="$(find "$dir/node_modules" -path '*opencode-linux-*/bin/opencode' | head -1)"
mkdir -p "$dir/home/.config/opencode" "$dir/work"
cat > "$dir/home/.config/opencode/opencode.json" <<JSON
{
  "provider": {
    "superpi": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "superpi",
      "options": { "baseURL": "$GATEWAY_URL/v1", "apiKey": "${SUPERPI_GATEWAY_TOKEN:-local}" },
      "models": { "superpi-code": { "name": "superpi code", "limit": { "context": 128000, "output": 8192 } } }
    }
  }
}
JSON
out="$(cd "$dir/work" && HOME="$dir/home" XDG_CONFIG_HOME="$dir/home/.config" XDG_DATA_HOME="$dir/home/.local/share" \
    XDG_CACHE_HOME="$dir/home/.cache" OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 \
    timeout 120 "$bin" run "superpi answers opencode" --model superpi/superpi-code 2>&1)"
echo "$out" | tail -5
if grep -q "superpi answers opencode" <<<"$out"; then echo "opencode: ok"; else echo "opencode: FAILED"; exit 1; fi
