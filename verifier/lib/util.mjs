// Small helpers shared by the verifier's checks: CBOR map access, integer test, deep equality
// with integer types merged (spec 03), the numpy array payload (spec E-6).
import { eqBytes } from './group.mjs';

// Map/record access
export const get = (m, k, dflt = undefined) => (m instanceof Map ? (m.has(k) ? m.get(k) : dflt) : dflt);
export const isInt = (v) => (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint';
export function deepEqual(a, b) {
  if (a instanceof Uint8Array || b instanceof Uint8Array) return a instanceof Uint8Array && b instanceof Uint8Array && eqBytes(a, b);
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map && b instanceof Map) || a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k))) return false;
    return true;
  }
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (typeof a === 'bigint' || typeof b === 'bigint') return (isInt(a) && isInt(b)) && BigInt(a) === BigInt(b);
  return a === b;
}
export const M = (entries) => new Map(entries);

// numpy-array payload {dtype, shape, data} (spec E-6)
export function objToArray(obj) {
  if (!(obj instanceof Map) || obj.size !== 3 || !obj.has('dtype') || !obj.has('shape') || !obj.has('data')) throw new Error('array payload must be a map with keys dtype, shape, data');
  const dtype = obj.get('dtype'), shape = obj.get('shape'), data = obj.get('data');
  const m = /^[<|]([iuf])(1|2|4|8)$/.exec(dtype);
  if (!m) throw new Error(`array dtype ${dtype} not allowed`);
  const size = Number(m[2]);
  const count = shape.reduce((s, x) => s * Number(x), 1);
  if (!(data instanceof Uint8Array) || data.length !== count * size) throw new Error('array data length does not match its shape');
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out = [];
  for (let i = 0; i < count; i++) {
    const o = i * size;
    if (m[1] === 'f') out.push(size === 8 ? dv.getFloat64(o, true) : dv.getFloat32(o, true));
    else if (size === 1) out.push(m[1] === 'i' ? dv.getInt8(o) : dv.getUint8(o));
    else if (size === 2) out.push(m[1] === 'i' ? dv.getInt16(o, true) : dv.getUint16(o, true));
    else if (size === 4) out.push(m[1] === 'i' ? dv.getInt32(o, true) : dv.getUint32(o, true));
    else out.push(Number(m[1] === 'i' ? dv.getBigInt64(o, true) : dv.getBigUint64(o, true)));
  }
  return { shape: shape.map(Number), values: out };
}
