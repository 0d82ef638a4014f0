// lib/wasm_group.mjs (WebAssembly ristretto255) against @noble/curves
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { ristretto255_hasher } from '@noble/curves/ed25519.js';
import { G, L, Point, VerifyError } from '../lib/group.mjs';
import { decodeBlob, decodeList, decodeOne, derive, encode, fromNoble, msmBytes, msmIsZero, rowSums } from '../lib/wasm_group.mjs';

const rs = () => BigInt(`0x${crypto.randomBytes(40).toString('hex')}`) % L;
const randPoints = (n) => Array.from({ length: n }, () => G.multiply(rs() || 1n));
const hex = (b) => Buffer.from(b).toString('hex');

test('decode then encode is the identity on valid encodings, and agrees with noble', () => {
  const ps = randPoints(200);
  const encs = ps.map((p) => p.toBytes());
  const ptrs = decodeList(encs, (i) => `p[${i}]`);
  assert.deepEqual(encode(ptrs).map(hex), encs.map(hex));
});

test('valid/invalid decisions agree with noble on random and edge-case byte strings', () => {
  const cases = [];
  for (let i = 0; i < 3000; i++) cases.push(new Uint8Array(crypto.randomBytes(32)));
  for (let i = 0; i < 300; i++) { const b = new Uint8Array(crypto.randomBytes(32)); b[0] &= 0xfe; b[31] &= 0x7f; cases.push(b); }
  const pm = (2n ** 255n - 19n);
  for (const v of [pm, pm + 2n, pm - 1n, 1n, 2n, 2n ** 255n - 2n]) { const b = new Uint8Array(32); let x = v; for (let i = 0; i < 32; i++) { b[i] = Number(x & 0xffn); x >>= 8n; } cases.push(b); }
  for (const p of randPoints(50)) { const b = p.toBytes(); cases.push(b); const c = b.slice(); c[31] |= 0x80; cases.push(c); }
  let valid = 0;
  for (const b of cases) {
    let ok = true; try { Point.fromBytes(b); } catch { ok = false; }
    const zero = b.every((x) => x === 0);
    let mine = true; try { decodeOne(b, 'x', true); } catch (e) { assert.ok(e instanceof VerifyError); mine = false; }
    assert.equal(mine, ok, hex(b));
    if (ok && !zero) valid++;
  }
  assert.ok(valid >= 100);
});

test('identity refused unless allowed, with the messages of group.mjs', () => {
  const enc = [G.toBytes(), new Uint8Array(32), G.double().toBytes()];
  assert.throws(() => decodeList(enc, (i) => `w[${i}]`), /w\[1\]: identity element not allowed/);
  const ptrs = decodeList(enc, (i) => `w[${i}]`, true);
  assert.deepEqual(encode(ptrs).map(hex), enc.map(hex));
  const bad = G.toBytes().slice(); bad[0] |= 1;
  assert.throws(() => decodeBlob(bad, 1, 'blob'), /blob\[0\]: invalid or non-canonical ristretto255 encoding/);
  assert.throws(() => decodeBlob(bad, 2, 'blob'), /blob: expected 2 elements \(64 bytes\)/);
});

test('element derivation equals noble deriveToCurve', () => {
  const us = Array.from({ length: 100 }, () => new Uint8Array(crypto.randomBytes(64)));
  assert.deepEqual(encode(derive(us)).map(hex), us.map((u) => hex(ristretto255_hasher.deriveToCurve(u).toBytes())));
});

test('multi-scalar multiplication equals the sum of noble scalar multiplications', () => {
  for (const n of [1, 2, 3, 7, 40, 300, 5000]) {
    const ps = randPoints(Math.min(n, 60));
    const pts = Array.from({ length: n }, (_, i) => ps[i % ps.length]);
    const ss = pts.map((_, i) => (i === 1 ? 0n : i === 2 ? L - 1n : i === 3 ? -5n : rs()));
    // the reference: noble, one scalar multiplication per distinct point
    const per = ps.map(() => 0n);
    ss.forEach((s, i) => { per[i % ps.length] = (((per[i % ps.length] + s) % L) + L) % L; });
    const want = ps.reduce((acc, p, i) => (per[i] === 0n ? acc : acc.add(p.multiply(per[i]))), Point.ZERO);
    const ptrs = decodeList(pts.map((p) => p.toBytes()), (i) => `p[${i}]`);
    assert.equal(hex(msmBytes(ptrs, ss)), hex(want.toBytes()), `n = ${n}`);
  }
  const ptrs = decodeList(randPoints(2).map((p) => p.toBytes()), (i) => `p[${i}]`);
  assert.ok(msmIsZero([ptrs[0], ptrs[0], ptrs[1]], [5n, -5n, L]));
  assert.ok(!msmIsZero([ptrs[0], ptrs[1]], [1n, 1n]));
  assert.equal(hex(msmBytes([fromNoble(G)], [1n])), hex(G.toBytes()));
});

test('row sums equal noble additions and subtractions', () => {
  const a = randPoints(30), b = randPoints(30), c = randPoints(30);
  const enc = (ps) => decodeList(ps.map((p) => p.toBytes()), (i) => `p[${i}]`);
  const got = rowSums([enc(a), enc(b), enc(c)], 0b110).map(hex);
  assert.deepEqual(got, a.map((p, i) => hex(p.subtract(b[i]).subtract(c[i]).toBytes())));
  const same = rowSums([enc(a), enc(a)], 0b10).map(hex);
  assert.deepEqual(same, a.map(() => hex(new Uint8Array(32))));
});

const hasClang = spawnSync('clang-14', ['--version']).status === 0;
test('lib/ristretto.wasm is what wasm/build.sh makes of wasm/ristretto.c', { skip: hasClang ? false : 'clang-14 (with lld-14) is not installed' }, () => {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wasm-')), 'r.wasm');
  const here = path.dirname(new URL(import.meta.url).pathname);
  execFileSync('bash', [path.join(here, '..', 'wasm', 'build.sh')], { env: { ...process.env, OUT: out }, stdio: 'pipe' });
  assert.ok(fs.readFileSync(out).equals(fs.readFileSync(path.join(here, '..', 'lib', 'ristretto.wasm'))), 'rebuild verifier/lib/ristretto.wasm with verifier/wasm/build.sh');
});
