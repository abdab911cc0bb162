#!/usr/bin/env bash
# Builds the showcase's web page into a folder any static file server can
# serve:
#
#   bash web/build.sh              # -> target/web-page/
#   bash web/build.sh some/dir     # -> some/dir/
#   python3 -m http.server -d target/web-page 8000   # then open http://localhost:8000
#
# Needs the wasm32 target (`rustup target add wasm32-unknown-unknown`).
# Uses Binaryen's `wasm-opt` (Debian: `apt-get install binaryen`) when it is
# installed, to shrink the module; without it the page works the same,
# only larger.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/target/web-page}"
cd "$root"
cargo build -p mosaic-web --lib --release --target wasm32-unknown-unknown
mkdir -p "$out"
cp web/page/index.html web/page/main.js "$out/"
wasm="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/mosaic_web.wasm"
if command -v wasm-opt >/dev/null; then
  # The features rustc's wasm32 target enables by default.
  wasm-opt -O2 --strip-debug --strip-producers \
    --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
    --enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types \
    "$wasm" -o "$out/mosaic_web.wasm"
else
  cp "$wasm" "$out/mosaic_web.wasm"
fi
echo "page: $out ($(wc -c < "$out/mosaic_web.wasm") bytes of wasm)"
