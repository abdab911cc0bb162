// The page's glue: loads mosaic_web.wasm, steps the simulation by the time
// that passed (fixed 20 ms frames), draws every animation frame, shows the
// story and the timing table, and forwards the keyboard. The exports are
// documented in web/src/lib.rs.
const FRAME_MS = 20;
const PARTICLES = 500;
const KEYS = { ArrowLeft: 1, KeyA: 1, ArrowRight: 2, KeyD: 2, ArrowUp: 4, KeyW: 4, Space: 4 };

let memory;
const text = (ptr, len) => new TextDecoder().decode(new Uint8Array(memory.buffer, ptr, len));
const imports = {
  mosaic: {
    now_ms: () => performance.now(),
    print: (ptr, len) => console.error(text(ptr, len)),
  },
};
const bytes = await (await fetch("mosaic_web.wasm")).arrayBuffer();
const { instance } = await WebAssembly.instantiate(bytes, imports);
const wasm = instance.exports;
memory = wasm.memory;
const bufferText = () => text(wasm.text_ptr(), wasm.text_len());

const canvas = document.getElementById("view");
const ctx = canvas.getContext("2d");
const [w, h] = [wasm.width(), wasm.height()];
const status = document.getElementById("status");
const story = document.getElementById("story");
const timings = document.getElementById("timings");

// What the browser test reads (web/tests/page_browser.rs).
const page = (window.mosaic = { frame: 0, fps: 0, story: "", entities: 0 });
let storyLines, lag, last, fpsFrom, fpsCount;

function start() {
  if (!wasm.start(PARTICLES, 7)) throw new Error(bufferText());
  storyLines = 0; lag = 0; last = performance.now(); fpsFrom = last; fpsCount = 0;
  story.textContent = "";
}

let held = 0;
function key(e, down) {
  const bit = KEYS[e.code];
  if (!bit) return;
  e.preventDefault();
  held = down ? held | bit : held & ~bit;
  wasm.set_keys(held);
}
addEventListener("keydown", (e) => key(e, true));
addEventListener("keyup", (e) => key(e, false));
document.getElementById("restart").onclick = () => { held = 0; start(); };

function tick(now) {
  // At most 5 steps behind; never negative (the first callback's time may
  // precede the `performance.now()` read in start()).
  lag = Math.max(0, Math.min(lag + now - last, 5 * FRAME_MS));
  last = now;
  const steps = Math.floor(lag / FRAME_MS);
  lag -= steps * FRAME_MS;
  if (steps) wasm.step(steps);

  const ptr = wasm.draw();
  ctx.putImageData(new ImageData(new Uint8ClampedArray(memory.buffer, ptr, w * h * 4), w, h), 0, 0);

  const total = wasm.story(storyLines);
  if (total > storyLines) {
    story.textContent += bufferText();
    page.story = story.textContent;
    storyLines = total;
  }
  fpsCount++;
  if (now - fpsFrom >= 1000) {
    page.fps = (fpsCount * 1000) / (now - fpsFrom);
    fpsFrom = now; fpsCount = 0;
    wasm.timings();
    timings.textContent = bufferText();
  }
  page.frame = wasm.frame();
  page.entities = wasm.entities();
  status.textContent = `frame ${page.frame} · ${page.entities} entities · ${page.fps.toFixed(0)} fps · input ${wasm.input_on() ? "on" : "off"}`;
  requestAnimationFrame(tick);
}
start();
requestAnimationFrame(tick);
