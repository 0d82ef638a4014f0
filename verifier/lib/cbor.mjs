// CBOR of docs/spec/01-encodings.md section 2: decoding with cborg (maps as Map, so integer keys
// stay integers), and the canonical encoder used to recompute payload digests (RFC 7049
// canonical: shortest heads, map keys ordered by the length of their encoding, then bytewise).
import { decode as cborgDecode } from 'cborg';

const bigTag = (neg) => (bytes) => {
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  return neg ? -1n - v : v;
};

export function decode(bytes) {
  const tags = [];
  tags[2] = bigTag(false);
  tags[3] = bigTag(true);
  return cborgDecode(bytes, { useMaps: true, tags, rejectDuplicateMapKeys: true });
}

function head(major, n) {
  n = BigInt(n);
  const m = major << 5;
  if (n < 24n) return Uint8Array.of(m | Number(n));
  if (n < 0x100n) return Uint8Array.of(m | 24, Number(n));
  if (n < 0x10000n) return Uint8Array.of(m | 25, Number(n >> 8n), Number(n & 0xffn));
  const out = [];
  const len = n < 0x100000000n ? 4 : 8;
  for (let k = len - 1; k >= 0; k--) out.push(Number((n >> BigInt(8 * k)) & 0xffn));
  return Uint8Array.of(m | (len === 4 ? 26 : 27), ...out);
}

const cat = (parts) => {
  const len = parts.reduce((s, p) => s + p.length, 0);
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
};

function encodeFloat(x) {
  const f32 = Math.fround(x);
  // half precision if exact
  const half = toHalf(x);
  if (half !== null) return Uint8Array.of(0xf9, half >> 8, half & 0xff);
  if (f32 === x || Number.isNaN(x)) {
    const b = new Uint8Array(5); b[0] = 0xfa; new DataView(b.buffer).setFloat32(1, x); return b;
  }
  const b = new Uint8Array(9); b[0] = 0xfb; new DataView(b.buffer).setFloat64(1, x); return b;
}

function toHalf(x) {
  if (Number.isNaN(x)) return 0x7e00;
  if (x === Infinity) return 0x7c00;
  if (x === -Infinity) return 0xfc00;
  const sign = (x < 0 || Object.is(x, -0)) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a === 0) return sign;
  for (let e = -14; e <= 15; e++) {
    const m = a / 2 ** e; // normal: 1.mmmmmmmmmm
    if (m >= 1 && m < 2) {
      const frac = (m - 1) * 1024;
      if (Number.isInteger(frac)) return sign | ((e + 15) << 10) | frac;
      return null;
    }
  }
  const sub = a / 2 ** -24; // subnormal
  if (Number.isInteger(sub) && sub < 1024) return sign | sub;
  return null;
}

export class CFloat { constructor(v) { this.value = v; } }

export function encode(v) {
  if (v === null || v === undefined) return Uint8Array.of(0xf6);
  if (v === false) return Uint8Array.of(0xf4);
  if (v === true) return Uint8Array.of(0xf5);
  if (v instanceof CFloat) return encodeFloat(v.value);
  if (typeof v === 'number' && !Number.isInteger(v)) return encodeFloat(v);
  if (typeof v === 'number' || typeof v === 'bigint') {
    const n = BigInt(v);
    if (n >= 0n) {
      if (n < 1n << 64n) return head(0, n);
      return cat([Uint8Array.of(0xc2), encode(bigBytes(n))]);
    }
    const m = -1n - n;
    if (m < 1n << 64n) return head(1, m);
    return cat([Uint8Array.of(0xc3), encode(bigBytes(m))]);
  }
  if (v instanceof Uint8Array) return cat([head(2, v.length), v]);
  if (typeof v === 'string') {
    const b = new TextEncoder().encode(v);
    return cat([head(3, b.length), b]);
  }
  if (Array.isArray(v)) return cat([head(4, v.length), ...v.map(encode)]);
  const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
  const enc = entries.map(([k, x]) => [encode(k), encode(x)]);
  enc.sort((p, q) => compareKeys(p[0], q[0]));
  return cat([head(5, enc.length), ...enc.flat()]);
}

function bigBytes(n) {
  const out = [];
  while (n > 0n) { out.unshift(Number(n & 0xffn)); n >>= 8n; }
  return Uint8Array.from(out);
}

function compareKeys(a, b) {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}
