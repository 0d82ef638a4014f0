// Group, scalars and Fiat-Shamir hashing of docs/spec/02-group.md (spec version 1).
import { ristretto255, ristretto255_hasher } from '@noble/curves/ed25519.js';
import { pippenger } from '@noble/curves/abstract/curve.js';
import crypto from 'node:crypto';

export const Point = ristretto255.Point;
// SHA-512 / SHA-256 (FIPS 180-4) through node's crypto, as Uint8Array
export const sha512 = (b) => new Uint8Array(crypto.createHash('sha512').update(b).digest());
export const sha256 = (b) => new Uint8Array(crypto.createHash('sha256').update(b).digest());
export const L = 2n ** 252n + 27742317777372353535851937790883648493n;
export const G = Point.BASE;
export const ZERO = Point.ZERO;
const enc = new TextEncoder();

export class VerifyError extends Error {}

export const utf8 = (s) => enc.encode(s);
export function concat(parts) {
  const len = parts.reduce((s, p) => s + p.length, 0);
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}
export function le8(x) {
  const out = new Uint8Array(8);
  let v = BigInt.asUintN(64, BigInt(x));
  for (let i = 0; i < 8; i++) { out[i] = Number(v & 0xffn); v >>= 8n; }
  return out;
}
// little-endian bytes -> BigInt (through hex: twice as fast as shifting byte by byte)
export const leInt = (bytes) => (bytes.length ? BigInt(`0x${Buffer.from(bytes).reverse().toString('hex')}`) : 0n);
export function scalarBytes(s) {
  let v = ((s % L) + L) % L;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) { out[i] = Number(v & 0xffn); v >>= 8n; }
  return out;
}
export const mod = (x) => ((x % L) + L) % L;
export function inv(x) {
  // Fermat: x^(L-2)
  let r = 1n, b = mod(x), e = L - 2n;
  while (e > 0n) { if (e & 1n) r = (r * b) % L; b = (b * b) % L; e >>= 1n; }
  return r;
}
export const hex = (b) => Buffer.from(b).toString('hex');
export const eqBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// A scalar: 32 bytes little-endian, value < L (spec S-2).
export function scalar(b, where) {
  if (!(b instanceof Uint8Array) || b.length !== 32) throw new VerifyError(`${where}: scalar must be 32 bytes`);
  const v = leInt(b);
  if (v >= L) throw new VerifyError(`${where}: non-canonical scalar (>= group order)`);
  return v;
}
export function scalars(blob, n, where) {
  if (!(blob instanceof Uint8Array) || blob.length !== 32 * n) throw new VerifyError(`${where}: expected ${n} scalars (${32 * n} bytes)`);
  const out = [];
  for (let i = 0; i < n; i++) out.push(scalar(blob.subarray(32 * i, 32 * i + 32), `${where}[${i}]`));
  return out;
}
// An element: RFC 9496 canonical decoding; the identity is refused unless allowed (spec S-1).
export function point(b, where, allowIdentity = false) {
  if (!(b instanceof Uint8Array) || b.length !== 32) throw new VerifyError(`${where}: group element must be 32 bytes`);
  let p;
  try { p = Point.fromBytes(b); } catch { throw new VerifyError(`${where}: invalid or non-canonical ristretto255 encoding`); }
  if (!allowIdentity && p.is0()) throw new VerifyError(`${where}: identity element not allowed`);
  return p;
}
export function points(blob, n, where, allowIdentity = false) {
  if (!(blob instanceof Uint8Array) || blob.length !== 32 * n) throw new VerifyError(`${where}: expected ${n} elements (${32 * n} bytes)`);
  const out = [];
  for (let i = 0; i < n; i++) out.push(point(blob.subarray(32 * i, 32 * i + 32), `${where}[${i}]`, allowIdentity));
  return out;
}
export function splitBlob(blob, n, where) {
  if (!(blob instanceof Uint8Array) || blob.length !== 32 * n) throw new VerifyError(`${where}: expected ${n} elements (${32 * n} bytes)`);
  const out = [];
  for (let i = 0; i < n; i++) out.push(blob.subarray(32 * i, 32 * i + 32));
  return out;
}
export const mul = (p, s) => { s = mod(s); return s === 0n ? ZERO : p.multiply(s); };
export const mulBase = (s) => mul(G, s);
export function msm(ps, ss) {
  if (ps.length === 0) return ZERO;
  return pippenger(Point, ps, ss.map(mod));
}

// Fiat-Shamir (spec F-1..F-4)
const DOMAIN = 'sdp-mixnet-v1|';
export function part(p) {
  if (p instanceof Uint8Array) return p;
  if (typeof p === 'string') return utf8(p);
  if (typeof p === 'boolean') return Uint8Array.of(p ? 1 : 0);
  if (typeof p === 'number' || typeof p === 'bigint') return le8(p);
  throw new TypeError(`cannot hash part ${p}`);
}
export function fsHash(label, ...parts) {
  const chunks = [utf8(DOMAIN + label + '|')];
  for (const p of parts) { const b = part(p); chunks.push(le8(b.length), b); }
  return sha512(concat(chunks));
}
export const fsScalar = (label, ...parts) => leInt(fsHash(label, ...parts)) % L;
export function scalarVector(seed, n) {
  const base = concat([utf8(DOMAIN + 'vec|'), seed]);
  const out = new Array(n);
  const buf = new Uint8Array(base.length + 8);
  buf.set(base);
  for (let i = 0; i < n; i++) { buf.set(le8(i), base.length); out[i] = leInt(sha512(buf)) % L; }
  return out;
}
export function hashToPoint(...parts) {
  const chunks = [];
  for (const p of parts) chunks.push(le8(p.length), p);
  return ristretto255_hasher.deriveToCurve(sha512(concat(chunks)));
}
// the uniform 64-byte strings of generators(domain, n), for element derivation in bulk
export function generatorSeeds(domain, n) {
  const seed = sha512(concat([utf8('ristretto255-generators|'), domain]));
  const out = [];
  const buf = new Uint8Array(72);
  buf.set(seed);
  for (let i = 0; i < n; i++) { buf.set(le8(i), 64); out.push(sha512(buf)); }
  return out;
}
export const generators = (domain, n) => generatorSeeds(domain, n).map((u) => ristretto255_hasher.deriveToCurve(u));
