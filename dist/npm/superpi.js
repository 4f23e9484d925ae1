#!/usr/bin/env node
// The `superpi` command of the npm package: runs the binary of the platform package npm
// installed beside this one (an optional dependency whose os, cpu and libc match), with the
// same arguments, standard streams and exit status. Written for `cargo xtask dist` (xtask/src/npm.rs).
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

function platformPackage() {
  const arch = { x64: "x64", arm64: "arm64" }[process.arch];
  if (process.platform !== "linux" || !arch) return null;
  // glibc or musl: Node's own report says which C library it runs on.
  const glibc = Boolean(process.report?.getReport?.().header?.glibcVersionRuntime);
  return `superpi-linux-${arch}${glibc ? "" : "-musl"}`;
}

const name = platformPackage();
if (!name) {
  console.error(`superpi: no build for ${process.platform}-${process.arch} (Linux x64 and arm64 only)`);
  process.exit(1);
}
let dir;
try {
  dir = path.dirname(require.resolve(`${name}/package.json`));
} catch {
  console.error(`superpi: the package ${name} is not installed: install superpi again without --no-optional`);
  process.exit(1);
}

const child = spawn(path.join(dir, "bin", "superpi"), process.argv.slice(2), { stdio: "inherit" });
// Signals for the agent go to it; this script waits for it to end and ends the same way.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (err) => {
  console.error(`superpi: ${err.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
