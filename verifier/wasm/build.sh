#!/usr/bin/env bash
# Rebuild verifier/lib/ristretto.wasm from verifier/wasm/ristretto.c (Debian: apt-get install clang-14 lld-14).
# The .wasm is committed, so the verifier needs no compiler; rebuild after editing the C source
# (OUT=path writes elsewhere: test/wasm_group.test.mjs rebuilds and compares when clang-14 is here).
set -euo pipefail
cd "$(dirname "$0")"
CC=${CC:-clang-14}
OUT=${OUT:-../lib/ristretto.wasm}
"$CC" --target=wasm32 -O3 -nostdlib -fno-builtin -mbulk-memory -Wall -Wextra \
  -Wl,--no-entry -Wl,--export=init,--export=alloc,--export=mark,--export=reset \
  -Wl,--export=decode,--export=derive,--export=encode_niels,--export=rowsum,--export=msm \
  -Wl,--max-memory=4294967296 -o "$OUT" ristretto.c
ls -l "$OUT"
