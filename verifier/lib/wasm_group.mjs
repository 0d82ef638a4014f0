// Bulk ristretto255 for the verifier: decoding, element derivation and multi-scalar
// multiplication in WebAssembly (lib/ristretto.wasm, built from wasm/ristretto.c by
// wasm/build.sh). @noble/curves has the group but works on BigInt field elements (a decode
// costs ~0.2 ms, its Pippenger ~0.2 ms a point), and no maintained npm package offers a
// ristretto255 multi-scalar multiplication, so the bulk path is hand-written here; every
// function is cross-checked against @noble/curves in test/wasm_group.test.mjs.
//
// A decoded point is a number: the byte offset of its affine form in the WebAssembly memory.
// Points live until the process ends (the main job's run decodes about 10^6: ~120 MB).
import fs from 'node:fs';
import { Point, VerifyError } from './group.mjs';

const P25519 = 2n ** 255n - 19n;
const fmod = (x) => ((x % P25519) + P25519) % P25519;
const fpow = (b, e) => { let r = 1n; b = fmod(b); while (e > 0n) { if (e & 1n) r = (r * b) % P25519; b = (b * b) % P25519; e >>= 1n; } return r; };
// RFC 9496 section 4.1 constants, checked below by the identities that define them
const D = fmod(-121665n * fpow(121666n, P25519 - 2n));
const SQRT_M1 = 19681161376707505956807079304988542015446066515923890162744021073123829784752n;
const INVSQRT_A_MINUS_D = 54469307008909316920995813868745141605393597292927456921205312896311721017578n;
const SQRT_AD_MINUS_ONE = 25063068953384623474111414158702152701244531502492656460079210482610430750235n;
const ONE_MINUS_D_SQ = fmod(1n - D * D);
const D_MINUS_ONE_SQ = fmod((D - 1n) * (D - 1n));
if (fmod(SQRT_M1 * SQRT_M1) !== P25519 - 1n || fmod(INVSQRT_A_MINUS_D * INVSQRT_A_MINUS_D * (-1n - D)) !== 1n
  || fmod(SQRT_AD_MINUS_ONE * SQRT_AD_MINUS_ONE) !== fmod(-D - 1n)) throw new Error('wasm_group: bad curve constants');

const le32 = (v) => { const out = new Uint8Array(32); for (let i = 0; i < 32; i++) { out[i] = Number(v & 0xffn); v >>= 8n; } return out; };

const wasmPath = new URL('./ristretto.wasm', import.meta.url);
const { instance } = await WebAssembly.instantiate(fs.readFileSync(wasmPath), {});
const W = instance.exports;
const heap = () => new Uint8Array(W.memory.buffer);
function alloc(bytes) {
  const p = W.alloc(bytes);
  if (p === 0) throw new Error(`wasm_group: out of memory allocating ${bytes} bytes`);
  return p;
}
{
  const k = alloc(6 * 32);
  [D, SQRT_M1, INVSQRT_A_MINUS_D, SQRT_AD_MINUS_ONE, ONE_MINUS_D_SQ, D_MINUS_ONE_SQ].forEach((c, i) => heap().set(le32(c), k + 32 * i));
  W.init(k);
}
export const POINT_BYTES = 120;
// a bad element: VerifyError with the index of the element in its list
const bad = (i, message) => Object.assign(new VerifyError(message), { index: i });

// copy byte strings into the memory (a temporary region above `mark`)
function put(chunks, size) {
  const p = alloc(chunks.length * size);
  const h = heap();
  chunks.forEach((c, i) => h.set(c, p + size * i));
  return p;
}
// n encodings (an array of 32-byte strings) -> Int32Array of points; a bad one throws the
// message of group.mjs point(): `${name(i)}: ...`
export function decodeList(encs, name, allowIdentity = false) {
  const n = encs.length;
  for (let i = 0; i < n; i++) {
    if (!(encs[i] instanceof Uint8Array) || encs[i].length !== 32) throw bad(i, `${name(i)}: group element must be 32 bytes`);
  }
  const out = alloc(n * POINT_BYTES);
  const m = W.mark();
  const r = W.decode(put(encs, 32), n, out);
  W.reset(m);
  const ptrs = new Int32Array(n);
  for (let i = 0; i < n; i++) ptrs[i] = out + POINT_BYTES * i;
  if (r >= 0) {
    const i = r >> 1;
    if (r & 1) {
      if (!allowIdentity) throw bad(i, `${name(i)}: identity element not allowed`);
      // the identity has no affine form with Z = 1 to spare: decode the rest after it
      return identityAware(encs, name, ptrs, i);
    }
    throw bad(i, `${name(i)}: invalid or non-canonical ristretto255 encoding`);
  }
  return ptrs;
}
// the identity (0, 1) is affine too: y+x = 1, y-x = 1, 2dxy = 0
let IDENTITY = 0;
function identity() {
  if (!IDENTITY) {
    IDENTITY = alloc(POINT_BYTES);
    const h = new Int32Array(W.memory.buffer, IDENTITY, 30);
    h.fill(0); h[0] = 1; h[10] = 1;
  }
  return IDENTITY;
}
function identityAware(encs, name, ptrs, first) {
  for (let i = first; i < encs.length; i++) {
    if (encs[i].every((x) => x === 0)) { ptrs[i] = identity(); continue; }
    const r = W.decode(put([encs[i]], 32), 1, ptrs[i]);
    if (r >= 0) throw bad(i, `${name(i)}: invalid or non-canonical ristretto255 encoding`);
  }
  return ptrs;
}
// single elements decoded without the identity, by their byte-string object: a list made of
// such objects (V-16's inputs are V-14's ciphertexts) is not decoded twice (knownList)
const known = new WeakMap();
export function decodeOne(enc, where, allowIdentity = false) {
  const p = decodeList([enc], () => where, allowIdentity)[0];
  if (!allowIdentity) known.set(enc, p);
  return p;
}
// the points of a list whose every element decodeOne decoded (identity refused), else null
export function knownList(encs) {
  const out = new Array(encs.length);
  for (let i = 0; i < encs.length; i++) { const p = known.get(encs[i]); if (p === undefined) return null; out[i] = p; }
  return out;
}
// a blob of n concatenated encodings (group.mjs points())
export function decodeBlob(blob, n, where, allowIdentity = false) {
  if (!(blob instanceof Uint8Array) || blob.length !== 32 * n) throw new VerifyError(`${where}: expected ${n} elements (${32 * n} bytes)`);
  const encs = [];
  for (let i = 0; i < n; i++) encs.push(blob.subarray(32 * i, 32 * i + 32));
  return decodeList(encs, (i) => `${where}[${i}]`, allowIdentity);
}
// a @noble/curves point -> a point here
export const fromNoble = (p) => (p.is0() ? identity() : decodeOne(p.toBytes(), 'point'));
const nobleCache = new WeakMap();
export function cachedFromNoble(p) {
  if (!nobleCache.has(p)) nobleCache.set(p, fromNoble(p));
  return nobleCache.get(p);
}

// RFC 9496 element derivation of n 64-byte strings
export function derive(uniform) {
  const n = uniform.length;
  const out = alloc(n * POINT_BYTES);
  const m = W.mark();
  W.derive(put(uniform, 64), n, out);
  W.reset(m);
  return Int32Array.from({ length: n }, (_, i) => out + POINT_BYTES * i);
}
// canonical encodings of points
export function encode(ptrs) {
  const m = W.mark();
  const src = alloc(ptrs.length * POINT_BYTES);
  const h = heap();
  ptrs.forEach((p, i) => h.copyWithin(src + POINT_BYTES * i, p, p + POINT_BYTES));
  const out = alloc(32 * ptrs.length);
  W.encode_niels(src, ptrs.length, out);
  const res = heap().slice(out, out + 32 * ptrs.length);
  W.reset(m);
  return Array.from({ length: ptrs.length }, (_, i) => res.subarray(32 * i, 32 * i + 32));
}
// rows of m points -> the encodings of sum_j (+/-) P[i][j] (neg: bit j set = subtract column j)
export function rowSums(cols, neg) {
  const m = cols.length, n = m ? cols[0].length : 0;
  const mk = W.mark();
  const idx = alloc(4 * n * m);
  const v = new Int32Array(W.memory.buffer, idx, n * m);
  for (let i = 0; i < n; i++) for (let j = 0; j < m; j++) v[i * m + j] = cols[j][i];
  const out = alloc(32 * n);
  W.rowsum(n, m, idx, neg, out);
  const res = heap().slice(out, out + 32 * n);
  W.reset(mk);
  return Array.from({ length: n }, (_, i) => res.subarray(32 * i, 32 * i + 32));
}

const L = 2n ** 252n + 27742317777372353535851937790883648493n;
// sum_i s_i P_i, as its canonical encoding (32 bytes); scalars are BigInt, reduced mod L here
export function msmBytes(ptrs, scalars) {
  const n = ptrs.length;
  if (n !== scalars.length) throw new Error('msm: points and scalars differ in number');
  const mk = W.mark();
  const sc = alloc(32 * n), idx = alloc(4 * n), out = alloc(32);
  const dv = new DataView(W.memory.buffer);
  for (let i = 0; i < n; i++) {
    let s = scalars[i] % L;
    if (s < 0n) s += L;
    const o = sc + 32 * i;
    dv.setBigUint64(o, BigInt.asUintN(64, s), true);
    dv.setBigUint64(o + 8, BigInt.asUintN(64, s >> 64n), true);
    dv.setBigUint64(o + 16, BigInt.asUintN(64, s >> 128n), true);
    dv.setBigUint64(o + 24, s >> 192n, true);
    dv.setInt32(idx + 4 * i, ptrs[i], true);
  }
  if (W.msm(sc, idx, n, out) !== 0) { W.reset(mk); throw new Error(`wasm_group: out of memory in a multi-scalar multiplication of ${n} points`); }
  const res = heap().slice(out, out + 32);
  W.reset(mk);
  return res;
}
export const msmIsZero = (ptrs, scalars) => msmBytes(ptrs, scalars).every((x) => x === 0);
export const msmPoint = (ptrs, scalars) => Point.fromBytes(msmBytes(ptrs, scalars));
