// Runs the core's wasm32 smoke test (web/examples/smoke.rs) under Node.js:
//   node web/smoke.mjs target/wasm32-unknown-unknown/release/examples/smoke.wasm
// A failed check or any panic traps the module: node then exits non-zero.
import { readFile } from "node:fs/promises";

const CHECKS = 15; // the `check` calls smoke.rs makes
const path = process.argv[2];
let memory;
const imports = {
  mosaic: {
    now_ms: () => performance.now(),
    print: (ptr, len) =>
      console.error(new TextDecoder().decode(new Uint8Array(memory.buffer, ptr, len))),
  },
};
const { instance } = await WebAssembly.instantiate(await readFile(path), imports);
memory = instance.exports.memory;
const started = performance.now();
const passed = instance.exports.run();
const ms = (performance.now() - started).toFixed(1);
if (passed !== CHECKS) {
  console.error(`wasm smoke test: ${passed} checks passed, expected ${CHECKS}`);
  process.exit(1);
}
console.log(`wasm smoke test: ${passed} checks passed in ${ms} ms`);
