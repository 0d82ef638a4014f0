// Mix-net checks of docs/spec/05-mixnet.md (V-10 .. V-18, spec version 1).
import crypto from 'node:crypto';
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import * as cbor from './cbor.mjs';
import {
  G, L, ZERO, VerifyError, concat, eqBytes, fsHash, fsScalar, generators, hashToPoint, hex, inv,
  le8, leInt, mod, msm, mul, mulBase, point, points, scalar, scalarVector, scalars, splitBlob, utf8,
} from './group.mjs';
import { blob } from './transcripts.mjs';
import { screen, submitters } from './submissions.mjs';

const RECORD_TYPE = 'mixnet.record';
const EMBED_BYTES = 30;

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
export const digest = (obj) => hex(sha256(cbor.encode(obj)));
const sentBy = (t, ty) => t.entries.filter((e) => e.dir === 'send' && e.ty === ty && e.pub);
const M = (entries) => new Map(entries);

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

// ------------------------------------------------------------------ ciphertext lists (spec E-3)
class Cts {
  constructor(a, b) { this.a = a; this.b = b; }
  get w() { return this.a.length; }
  get n() { return this.a.length ? this.a[0].length : 0; }
  digest() {
    return hashBytes([utf8('sdp-mixnet-v1|ciphertexts|'), le8n(this.w), le8n(this.n), ...this.a.map(concat), ...this.b.map(concat)]);
  }
  toObj() {
    return M([['w', this.w], ['n', this.n], ['a', this.a.map(concat)], ['b', this.b.map(concat)]]);
  }
  static fromObj(obj, where) {
    if (!(obj instanceof Map) || !['w', 'n', 'a', 'b'].every((k) => obj.has(k))) throw new VerifyError(`${where}: expected map with keys w, n, a, b`);
    const w = obj.get('w'), n = obj.get('n');
    if (!isInt(w) || !isInt(n) || w < 1 || n < 0) throw new VerifyError(`${where}: bad width/count`);
    const A = obj.get('a'), B = obj.get('b');
    if (!Array.isArray(A) || !Array.isArray(B) || A.length !== Number(w) || B.length !== Number(w)) throw new VerifyError(`${where}: expected ${w} components`);
    const split = (x, nm) => { const parts = splitBlob(x, Number(n), nm); for (const p of parts) if (p[31] & 0x80) throw new VerifyError(`${nm}: non-canonical encoding (top bit set)`); return parts; };
    return new Cts(A.map((x, j) => split(x, `${where}.a[${j}]`)), B.map((x, j) => split(x, `${where}.b[${j}]`)));
  }
}
const le8n = (x) => le8(x);
const hashBytes = (parts) => sha512(concat(parts));

// decoded points of a column, cached
const cache = new WeakMap();
function pts(col, where) {
  if (cache.has(col)) return cache.get(col);
  const out = col.map((b, i) => point(b, `${where}[${i}]`));
  cache.set(col, out);
  return out;
}

function randScalar() { return leInt(crypto.randomBytes(64)) % L || 1n; }

// ------------------------------------------------------------------ V-13 DKG (spec D-1..D-6)
function evalCommit(comm, x) {
  const xs = []; let p = 1n;
  for (let m = 0; m < comm.length; m++) { xs.push(p); p = (p * BigInt(x)) % L; }
  return msm(comm, xs);
}
function verifyDkg(sid, k, t, dkg) {
  const comms = new Map();
  const raw = get(dkg, 'commitments');
  for (let i = 1; i <= k; i++) {
    if (!raw.has(i)) continue;
    const cl = raw.get(i);
    if (!Array.isArray(cl) || cl.length !== t) throw new VerifyError(`dkg: dealer ${i} must publish ${t} commitments`);
    comms.set(i, { raw: cl, pts: cl.map((x, m) => point(x, `dkg.commitments[${i}][${m}]`)) });
  }
  const qual = new Set(comms.keys());
  for (const i of [...comms.keys()].sort((a, b) => a - b)) {
    const pok = get(get(dkg, 'pok'), i);
    let ok = false;
    try {
      const e = scalar(get(pok, 'e'), 'pok.e'), s = scalar(get(pok, 's'), 'pok.s');
      const c0 = comms.get(i).pts[0];
      const T = mulBase(s).subtract(mul(c0, e));
      ok = fsScalar('dkg-pok', sid, i, comms.get(i).raw[0], T.toBytes()) === e;
    } catch { ok = false; }
    if (!ok) qual.delete(i);
  }
  for (const comp of get(dkg, 'complaints', [])) {
    const d = get(comp, 'against');
    if (!comms.has(d)) continue;
    const share = get(comp, 'share', null);
    let ok = false;
    if (share !== null) {
      const sv = scalar(share, `dkg.complaint share of ${d}`);
      ok = mulBase(sv).equals(evalCommit(comms.get(d).pts, get(comp, 'by')));
    }
    if (!ok) qual.delete(d);
  }
  const qualL = [...qual].sort((a, b) => a - b);
  const pubQual = [...get(dkg, 'qual', [])].map(Number).sort((a, b) => a - b);
  if (JSON.stringify(qualL) !== JSON.stringify(pubQual)) throw new VerifyError(`dkg: published qualified set ${JSON.stringify(get(dkg, 'qual'))} != recomputed ${JSON.stringify(qualL)}`);
  if (qualL.length < t) throw new VerifyError(`dkg: only ${qualL.length} qualified dealers, threshold ${t}`);
  const pk = qualL.reduce((acc, i) => acc.add(comms.get(i).pts[0]), ZERO);
  const pkPub = get(dkg, 'pk');
  if (!(pkPub instanceof Uint8Array) || !eqBytes(pk.toBytes(), pkPub)) throw new VerifyError('dkg: published public key is not the sum of qualified dealers\' keys');
  const vks = new Map();
  for (let m = 1; m <= k; m++) {
    const y = qualL.reduce((acc, i) => acc.add(evalCommit(comms.get(i).pts, m)), ZERO);
    const pub = get(get(dkg, 'vks', new Map()), m);
    if (!(pub instanceof Uint8Array) || !eqBytes(pub, y.toBytes())) throw new VerifyError(`dkg: verification key of server ${m} does not match the commitments`);
    vks.set(m, y);
  }
  const parts = [];
  for (const i of qualL) parts.push(i, concat(comms.get(i).raw));
  return { pk, pkBytes: pkPub, vks, qual: qualL, dkgDigest: fsHash('dkg', ...parts) };
}

// ------------------------------------------------------------------ V-16 shuffle proofs (spec S-1..S-6)
const PROOF_KEYS = ['c', 'chat', 'that', 't1', 't2', 't3', 't4a', 't4b', 's1', 's2', 's3', 's4', 'shat', 'sprime'];
function parseProof(proof, n, w, where) {
  if (!(proof instanceof Map)) throw new VerifyError(`${where}: proof must be a map`);
  const missing = PROOF_KEYS.filter((k) => !proof.has(k));
  if (missing.length) throw new VerifyError(`${where}: proof lacks ${missing}`);
  const p = {};
  for (const k of ['c', 'chat', 'that']) { p[k + 'Raw'] = splitBlob(proof.get(k), n, `${where}.${k}`); p[k] = points(proof.get(k), n, `${where}.${k}`); }
  for (const k of ['t1', 't2', 't3']) { p[k + 'Raw'] = proof.get(k); p[k] = point(proof.get(k), `${where}.${k}`); }
  for (const k of ['t4a', 't4b']) {
    const v = proof.get(k);
    if (!Array.isArray(v) || v.length !== w) throw new VerifyError(`${where}.${k}: expected ${w} elements`);
    p[k + 'Raw'] = v; p[k] = v.map((x, j) => point(x, `${where}.${k}[${j}]`));
  }
  for (const k of ['s1', 's2', 's3']) p[k] = scalar(proof.get(k), `${where}.${k}`);
  const s4 = proof.get('s4');
  if (!Array.isArray(s4) || s4.length !== w) throw new VerifyError(`${where}.s4: expected ${w} scalars`);
  p.s4 = s4.map((x, j) => scalar(x, `${where}.s4[${j}]`));
  p.shat = scalars(proof.get('shat'), n, `${where}.shat`);
  p.sprime = scalars(proof.get('sprime'), n, `${where}.sprime`);
  return p;
}

// the equations of one proof of shuffle (spec S-4) as {where, eqs: [[name, [[scalar, point]]]]}
function shuffleEquations(sess, step, batch, pk, inp, out, proof, gens) {
  const where = `mix[${step}].${batch}`;
  const n = inp.n, w = inp.w;
  if (out.n !== n || out.w !== w) throw new VerifyError(`${where}: output has ${out.n}x${out.w} ciphertexts, input ${n}x${w}`);
  if (n < 2) throw new VerifyError(`${where}: fewer than 2 ciphertexts`);
  const [H, Hs] = gens;
  const p = parseProof(proof, n, w, where);
  const useed = fsHash('shuffle-u', sess, step, batch, inp.digest(), out.digest(), concat(p.cRaw));
  const u = scalarVector(useed, n);
  const ch = fsScalar('shuffle-c', useed, concat(p.chatRaw), concat(p.thatRaw), p.t1Raw, p.t2Raw, p.t3Raw, concat(p.t4aRaw), concat(p.t4bRaw));
  const prodU = u.reduce((x, y) => (x * y) % L, 1n);
  const inA = inp.a.map((c, j) => pts(c, `${where}.input.a[${j}]`));
  const inB = inp.b.map((c, j) => pts(c, `${where}.input.b[${j}]`));
  const outA = out.a.map((c, j) => pts(c, `${where}.output.a[${j}]`));
  const outB = out.b.map((c, j) => pts(c, `${where}.output.b[${j}]`));
  const sp = p.sprime, sh = p.shat;
  // the equations as lists of (scalar, point) that must sum to the identity
  const eqs = [];
  eqs.push(['permutation commitments do not sum to sum(H_i) (eq. 1)', [[p.s1, G], [-1n, p.t1], ...p.c.map((c) => [-ch, c]), ...Hs.map((h) => [ch, h])]]);
  eqs.push(['chain end is not a commitment to prod(u) (eq. 2)', [[p.s2, G], [-1n, p.t2], [-ch, p.chat[n - 1]], [ch * prodU, H]]]);
  eqs.push(['permutation commitment inconsistent with responses (eq. 3)', [[p.s3, G], ...Hs.map((h, i) => [sp[i], h]), [-1n, p.t3], ...p.c.map((c, i) => [-ch * u[i], c])]]);
  for (let j = 0; j < w; j++) {
    eqs.push([`output is not a re-encryption of the input (eq. 4a, component ${j})`, [[p.s4[j], pk], ...outA[j].map((x, i) => [sp[i], x]), [-1n, p.t4a[j]], ...inA[j].map((x, i) => [-ch * u[i], x])]]);
    eqs.push([`output is not a re-encryption of the input (eq. 4b, component ${j})`, [[p.s4[j], G], ...outB[j].map((x, i) => [sp[i], x]), [-1n, p.t4b[j]], ...inB[j].map((x, i) => [-ch * u[i], x])]]);
  }
  for (let i = 0; i < n; i++) {
    eqs.push([`chain step ${i} fails (eq. 5)`, [[sh[i], G], [sp[i], i === 0 ? H : p.chat[i - 1]], [-1n, p.that[i]], [-ch, p.chat[i]]]]);
  }
  return { where, eqs };
}

// add the equations, each with a secret random weight, into `acc` (point -> scalar): terms on
// the same point (the same decoded object: c_i, H_i, chat_i, G, a ciphertext of two steps)
// merge, so the multi-scalar multiplication has each point once (spec S-5)
function accumulate(acc, eqs) {
  for (const [, terms] of eqs) {
    const r = randScalar();
    for (const [s, q] of terms) acc.set(q, ((acc.get(q) ?? 0n) + s * r) % L);
  }
}
const holds = (acc) => msm([...acc.keys()], [...acc.values()]).is0();

// one step alone: its batched check, then each equation alone to name the one that fails
function checkStep({ where, eqs }) {
  const acc = new Map();
  accumulate(acc, eqs);
  if (holds(acc)) return;
  for (const [name, terms] of eqs) {
    if (!msm(terms.map((x) => x[1]), terms.map((x) => mod(x[0]))).is0()) throw new VerifyError(`${where}: ${name}`);
  }
  throw new VerifyError(`${where}: batched shuffle equation fails`);
}

// ------------------------------------------------------------------ V-18 decryption (spec Q-1..Q-4)
function lagrange0(xs) {
  return xs.map((xi, i) => {
    let num = 1n, den = 1n;
    xs.forEach((xk, k) => { if (k !== i) { num = (num * BigInt(xk)) % L; den = mod(den * (BigInt(xk) - BigInt(xi))); } });
    return (num * inv(den)) % L;
  });
}
function decShares(sess, server, batch, y, bs, ds, proof, dset) {
  if (ds.length !== bs.length || ds.some((d, j) => d.length !== bs[j].length)) return 'share count does not match ciphertexts';
  let seed, bsum, dsum, e, s;
  try {
    seed = fsHash('dec-rlc', sess, server, batch, concat(dset.map((j) => le8(j))), bs.length, ...bs.map(concat), ...ds.map(concat));
    const flatB = bs.flat(), flatD = ds.flat();
    const rho = scalarVector(seed, flatB.length);
    bsum = msm(flatB.map((x, i) => point(x, `ciphertext[${i}]`)), rho);
    dsum = msm(flatD.map((x, i) => point(x, `share[${i}]`)), rho);
    e = scalar(get(proof, 'e'), 'proof.e');
    s = scalar(get(proof, 's'), 'proof.s');
  } catch (err) { return `invalid share or proof: ${err.message}`; }
  const T1 = mulBase(s).subtract(mul(y, e)), T2 = mul(bsum, s).subtract(mul(dsum, e));
  const c = fsScalar('dleq|dec', seed, G.toBytes(), y.toBytes(), bsum.toBytes(), dsum.toBytes(), T1.toBytes(), T2.toBytes());
  return c === e ? null : 'decryption-share proof (DLEQ) fails';
}

// message embedding, decoding side (spec E-5)
function decodeRows(colPts, width, bound) {
  const W = BigInt(width), B = BigInt(bound);
  const top = B ** W;
  const bits = top - 1n === 0n ? 0 : (top - 1n).toString(2).length;
  const nb = Math.max(1, Math.floor((bits + 7) / 8));
  const comps = Math.ceil(nb / EMBED_BYTES);
  if (colPts.length !== comps) throw new VerifyError(`plaintext has ${colPts.length} components, layout needs ${comps}`);
  const out = [];
  const n = colPts.length ? colPts[0].length : 0;
  for (let i = 0; i < n; i++) {
    const parts = [];
    let bad = false;
    for (let j = 0; j < comps; j++) {
      const pt = colPts[j][i];
      if ((pt[0] & 1) || pt[31] > 0x3f) { bad = true; break; }
      parts.push(pt.subarray(1, 31));
    }
    if (bad) { out.push(null); continue; }
    let v = leInt(concat(parts));
    if (v >= top) { out.push(null); continue; }
    const row = [];
    for (let k = 0; k < width; k++) { row.push(Number(v % B)); v /= B; }
    out.push(row);
  }
  return out;
}

// ------------------------------------------------------------------ V-11 record vs the wire
function tieToWire(runDir, rec, publisher, servers, clients, analyzer, transcripts, rnd) {
  let start = 0;
  const subs = get(rec, 'submissions');
  for (const part of get(rec, 'inputs', [])) {
    const party = get(part, 'party'), count = Number(get(part, 'count', -1));
    if (!clients.includes(party) || !(party in transcripts)) return `the record names client party ${party}, not one whose transcript is here`;
    const piece = M([['users', get(part, 'users', null)], ['submissions', subs.slice(start, start + count)], ['sig', get(part, 'sig', null)]]);
    start += count;
    if (!sentBy(transcripts[party], 'mix.submissions').some((e) => e.dg === digest(piece))) return `the record's submissions from ${party} are not what ${party} sent`;
  }
  if (start !== subs.length) return "the record's submissions are not the client parties' lists";
  if (!sentBy(transcripts[publisher], 'mix.key').some((e) => e.dg === digest(M([['dkg', get(rec, 'dkg')]])))) return `the record's DKG is not the key ${publisher} announced`;
  for (const [n, step] of get(rec, 'mixes').entries()) {
    const label = get(step, 'server');
    if (!(typeof label === 'number' && Number.isInteger(label)) || label < 1 || label > servers.length) return `mix step ${n} is labelled ${label}, not a server 1..${servers.length}`;
    const mixer = servers[label - 1];
    if (!sentBy(transcripts[mixer], 'mix.output').some((e) => e.dg === digest(step))) return `mix step ${n} (server ${label}) is not what ${mixer} sent`;
  }
  const me = servers.indexOf(publisher) + 1;
  for (const [batch, byServer] of get(rec, 'decryption')) {
    for (const [j, shares] of byServer) {
      if (Number(j) === me) continue;
      const srv = servers[Number(j) - 1];
      const msgs = sentBy(transcripts[srv], 'mix.decshare').map((e) => cbor.decode(blob(runDir, srv, e.dg)));
      if (!msgs.some((m) => deepEqual(get(get(m, 'batches', new Map()), batch), shares))) return `decryption shares of server ${j} for batch '${batch}' were never sent`;
    }
  }
  let results = transcripts[analyzer].entries.filter((e) => e.dir === 'recv' && e.ty === 'mix.result').map((e) => cbor.decode(blob(runDir, analyzer, e.dg)));
  results = results.filter((r) => r instanceof Map && !r.has('delegated') && !r.has('abort'));
  results = results.filter((r, i) => i === 0 || !deepEqual(r, results[i - 1]));
  if (results.length <= rnd) return `the analyzer logged ${results.length} plaintext results, none for round ${rnd}`;
  const res = results[rnd];
  if (!deepEqual(get(res, 'users'), get(rec, 'users'))) return "the analyzer's user count differs from the record's";
  for (const [batch, obj] of get(res, 'batches', new Map())) {
    const rows = objToArray(get(obj, 'rows'));
    const valid = objToArray(get(obj, 'valid'));
    const plain = get(get(rec, 'plaintexts'), batch);
    const nrows = rows.shape[0];
    const width = rows.shape.length > 1 ? rows.shape[1] : 1;
    if (plain === undefined || plain.length !== nrows) return `batch '${batch}': the analyzer's plaintexts differ from the record's`;
    for (let i = 0; i < nrows; i++) {
      const mine = valid.values[i] ? rows.values.slice(i * width, (i + 1) * width) : null;
      const theirs = plain[i];
      const same = mine === null ? theirs === null : theirs !== null && theirs.length === mine.length && theirs.every((x, k) => Number(x) === mine[k]);
      if (!same) return `batch '${batch}': the analyzer's plaintexts differ from the record's`;
    }
  }
  return null;
}

// ------------------------------------------------------------------ V-19 input agreement (spec 05, I-1..I-3)
// the bytes a party signs to vouch for a mix-net message: each field length-prefixed (4 bytes, big endian)
function signedStatement(kind, session, party, dg) {
  const parts = [utf8('sdp-mixnet-evidence-v1')];
  for (const f of [kind, session, party, dg]) {
    const raw = utf8(f);
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, raw.length, false);
    parts.push(len, raw);
  }
  return concat(parts);
}
export function signedBy(keys, party, kind, session, dg, sig) {
  const key = keys[party];
  if (key === undefined || typeof dg !== 'string' || !(sig instanceof Uint8Array)) return false;
  try { return crypto.verify(null, signedStatement(kind, session, party, dg), key, sig); } catch { return false; }
}
const entrySigned = (keys, session, party, entry) => entry instanceof Map && signedBy(keys, party, 'inputs', session, get(entry, 'digest'), get(entry, 'sig'));
const listDigest = (subs, users) => digest(M([['users', users], ['submissions', subs]]));
function provesLie(keys, session, server, signed) {
  const report = get(signed, 'report');
  if (!(report instanceof Map)) return null;
  if (!signedBy(keys, server, 'report', session, digest(report), get(signed, 'sig'))) return null;
  for (const c of [...report.keys()].map(String).sort()) {
    const v = report.get(c);
    if (v !== null && v !== undefined && !entrySigned(keys, session, c, v)) return c;
  }
  return null;
}
function provesEquivocation(keys, session, party, pair) {
  return Array.isArray(pair) && pair.length === 2 && pair.every((e) => entrySigned(keys, session, party, e)) && get(pair[0], 'digest') !== get(pair[1], 'digest');
}
export function inputAgreement(rec, servers, keys) {
  const sid = String(get(rec, 'session_id'));
  const subs = get(rec, 'submissions');
  let start = 0;
  for (const part of get(rec, 'inputs', [])) {
    const count = Number(get(part, 'count'));
    const piece = subs.slice(start, start + count);
    start += count;
    const entry = M([['digest', listDigest(piece, get(part, 'users', null))], ['sig', get(part, 'sig', null)]]);
    if (!entrySigned(keys, sid, String(get(part, 'party')), entry)) return [false, `the list of ${get(part, 'party')} in the record is not signed by it`];
  }
  const named = [];
  for (const ev of get(rec, 'evidence', [])) {
    if (ev instanceof Map && ev.has('server')) {
      const j = ev.get('server');
      const name = typeof j === 'number' && Number.isInteger(j) && j >= 1 && j <= servers.length ? servers[j - 1] : null;
      const victim = name && provesLie(keys, sid, name, get(ev, 'report'));
      if (!victim) return [false, `the evidence against server ${j} does not prove a lie`];
      named.push(`server ${j} (${name}) lied in the input agreement: its signed report gives ${victim} a list ${victim} never signed`);
    } else if (!provesEquivocation(keys, sid, get(ev, 'party'), get(ev, 'equivocation'))) {
      return [false, `the evidence against client party ${get(ev, 'party')} proves nothing`];
    } else named.push(`client party ${get(ev, 'party')} equivocated: it signed two different lists`);
  }
  if (named.length) return [true, named.join('; ')];
  return [true, 'every included list is signed by its client party; no party was convicted'];
}

// a mix step's header {server, digest, sig} signed by the server it names ('mix' statement)
function stepSigned(keys, servers, session, head) {
  const j = get(head, 'server');
  if (!(head instanceof Map) || !(typeof j === 'number' && Number.isInteger(j)) || j < 1 || j > servers.length) return false;
  return signedBy(keys, servers[j - 1], 'mix', session, get(head, 'digest'), get(head, 'sig'));
}
// evidence {equivocation: [header, header]}: two different steps signed by one server -> its index
function provesStepEquivocation(keys, servers, session, ev) {
  const pair = get(ev, 'equivocation');
  if (!(Array.isArray(pair) && pair.length === 2) || !pair.every((h) => stepSigned(keys, servers, session, h))) return null;
  if (get(pair[0], 'server') !== get(pair[1], 'server') || get(pair[0], 'digest') === get(pair[1], 'digest')) return null;
  return get(pair[0], 'server');
}
// V-19 (abort evidence): a server that aborted with evidence sent to the analyzer
function abortsWithEvidence(runDir, servers, analyzer, transcripts, sessions, keys, add) {
  for (const e of transcripts[analyzer].entries) {
    if (!(e.dir === 'recv' && e.ty === 'mix.result' && servers.includes(e.peer) && e.pub)) continue;
    const msg = cbor.decode(blob(runDir, analyzer, e.dg));
    if (!(msg instanceof Map && msg.has('abort') && msg.has('evidence'))) continue;
    let who = null;
    for (const sid of sessions) { who = provesStepEquivocation(keys, servers, sid, msg.get('evidence')); if (who) break; }
    add('V-19', 'mix-net abort evidence', who !== null, who !== null ? `${e.peer} aborted: server ${who} (${servers[who - 1]}) equivocated, two different mix steps signed by it` : `${e.peer} aborted with evidence that proves nothing: ${msg.get('abort')}`);
  }
}

// ------------------------------------------------------------------ V-12 .. V-18 on one record
function verifyRecord(rec, add, label) {
  const run = (id, name, fn) => {
    let err;
    try { err = fn(); } catch (e) { err = e instanceof VerifyError ? e.message : `malformed artifact: ${e.message}`; }
    add(id, `${label}: ${name}`, err === null || err === undefined, err ?? '');
    return !err;
  };
  const params = get(rec, 'params');
  if (!(params instanceof Map) || !Array.isArray(get(params, 'batches'))) { add('V-12', `${label}: record`, false, 'record or its params are malformed'); return null; }
  let k, t, specs, sid;
  try {
    k = Number(get(params, 'k')); t = Number(get(params, 't'));
    specs = new Map(get(params, 'batches').map((b) => [get(b, 'name'), b]));
    sid = get(rec, 'session_id');
    if (typeof sid !== 'string') throw new Error('session_id missing');
    if (!Number.isInteger(k) || !Number.isInteger(t)) throw new Error('k and t must be integers');
    if (k < 2) throw new Error(`a mix-net needs at least 2 mix servers, got ${k}`);
    if (!(t >= 2 && t <= k)) throw new Error(`the mix-net threshold must lie in 2..${k} (mix servers), got ${t}`);
    const sv = get(params, 'servers');
    if (!Array.isArray(sv) || sv.length !== k) throw new Error(`params list ${sv} as servers, k = ${k}`);
  } catch (e) { add('V-12', `${label}: record`, false, `malformed params: ${e.message}`); return null; }
  add('V-12', `${label}: record`, true, `k = ${k}, t = ${t}, ${specs.size} batch(es)`);
  const st = {};
  if (!run('V-13', 'dkg', () => {
    const d = verifyDkg(sid, k, t, get(rec, 'dkg'));
    Object.assign(st, d);
    st.sess = fsHash('session', sid, d.pkBytes, d.dkgDigest, cbor.encode(params));
    return null;
  })) return null;
  const inputs = new Map();
  const subs = get(rec, 'submissions');
  if (!run('V-14', 'client submissions', () => {
    if (!Array.isArray(subs)) return 'submissions must be a list';
    const parts = get(rec, 'inputs');
    if (!Array.isArray(parts) || parts.reduce((s, p) => s + Number(get(p, 'count')), 0) !== subs.length) return "the client parties' input slices do not add up to the submissions";
    const { accepted, rejected } = screen(st.sess, specs, subs, submitters(parts));
    const pubRej = get(rec, 'rejected', []).map((r) => Number(get(r, 'index')));
    if (JSON.stringify(pubRej) !== JSON.stringify(rejected.map((r) => r.index))) return `published rejections differ from the recomputed ones (first recomputed: ${rejected.length ? `#${rejected[0].index} ${rejected[0].reason}` : "none"})`;
    for (const [name, spec] of specs) {
      const idx = accepted.get(name);
      const claimed = (get(get(rec, 'accepted'), name, [])).map(Number);
      if (JSON.stringify(claimed) !== JSON.stringify(idx)) return `batch '${name}': published accepted set differs from the recomputed one`;
      const comps = Number(get(spec, 'components'));
      const cts = idx.map((i) => get(subs[i], 'ct'));
      inputs.set(name, new Cts(
        Array.from({ length: comps }, (_, j) => cts.map((c) => get(c, 'a')[j])),
        Array.from({ length: comps }, (_, j) => cts.map((c) => get(c, 'b')[j]))));
    }
    const declared = parts.reduce((s, p) => s + Number(get(p, 'users')), 0);
    const users = Math.max(0, declared - new Set(rejected.map((r) => JSON.stringify([r.party, String(r.client)]))).size);
    if (!deepEqual(get(rec, 'users'), users)) return `published user count ${get(rec, 'users')}, recomputed ${users}`;
    return null;
  })) return null;
  const mixes = get(rec, 'mixes', []);
  if (!Array.isArray(mixes) || !mixes.every((m) => m instanceof Map)) { add('V-15', `${label}: mixes`, false, 'mixes must be a list of maps'); return null; }
  const labels = mixes.map((m) => get(m, 'server'));
  const dset = get(rec, 'decryption_set');
  if (!run('V-15', 'mixers', () => {
    if (!labels.length) return 'no mix server mixed';
    if (!labels.every((j) => typeof j === 'number' && Number.isInteger(j) && j >= 1 && j <= k)) return `mix step labels ${JSON.stringify(labels)} must be servers 1..${k}`;
    if (labels.some((a, i) => i > 0 && labels[i - 1] >= a)) return `mix step labels ${JSON.stringify(labels)} must be distinct and increasing`;
    if (!Array.isArray(dset)) return 'decryption set missing';
    const unmixed = dset.filter((j) => !labels.includes(j));
    if (unmixed.length) return `decryption set ${JSON.stringify(dset)} includes servers ${JSON.stringify(unmixed)} that did not mix (${JSON.stringify(labels)})`;
    return null;
  })) return null;
  const current = new Map(inputs);
  for (const name of specs.keys()) {
    if (!run('V-16', `mixes ${JSON.stringify(labels)} of ${name}`, () => {
      let prev = inputs.get(name);
      let gens = null;
      // every step's equations in one combination; on failure each step alone names the first
      // failing step and equation (spec S-5)
      const acc = new Map(), steps = [];
      for (const mix of mixes) {
        const step = get(mix, 'server');
        const b = get(get(mix, 'batches'), name);
        const out = Cts.fromObj(get(b, 'output'), `mix[${step}].${name}.output`);
        if (inputs.get(name).n < 2) {
          if (!deepEqual(out.toObj(), inputs.get(name).toObj()) || get(b, 'proof') !== null) return `mix[${step}].${name}: a batch of < 2 messages must be carried over`;
          continue;
        }
        if (gens === null) {
          const n = inputs.get(name).n;
          gens = [hashToPoint(utf8('sdp-mixnet-v1|'), utf8('shuffle-H'), st.sess, utf8(name)),
            generators(concat([utf8('sdp-mixnet-v1|shuffle-Hi|'), st.sess, utf8('|'), utf8(name)]), n)];
        }
        const args = [st.sess, step, name, st.pk, prev, out, get(b, 'proof'), gens];
        accumulate(acc, shuffleEquations(...args).eqs);
        steps.push(args);
        prev = out;
      }
      if (steps.length && !holds(acc)) {
        for (const args of steps) checkStep(shuffleEquations(...args));
        throw new VerifyError(`mixes of ${name}: batched shuffle equations fail`);
      }
      current.set(name, prev);
      return null;
    })) return null;
  }
  if (!Array.isArray(dset) || dset.length !== t || !dset.every((j) => typeof j === 'number' && st.vks.has(j)) || dset.some((j, i) => i > 0 && dset[i - 1] >= j)) {
    add('V-17', `${label}: decryption set`, false, `decryption set must be ${t} servers with keys`); return null;
  }
  add('V-17', `${label}: decryption set`, true, `servers ${JSON.stringify(dset)}`);
  const lam = lagrange0(dset);
  const plain = new Map();
  for (const name of specs.keys()) {
    const fin = current.get(name);
    if (!run('V-18', `decryption ${name}`, () => {
      const shares = get(get(rec, 'decryption'), name);
      const pub = get(get(rec, 'plaintexts'), name);
      if (fin.n === 0) {
        if (!(shares instanceof Map && shares.size === 0) || !(Array.isArray(pub) && pub.length === 0)) return 'an empty batch must have no shares and no plaintexts';
        plain.set(name, []); return null;
      }
      const got = [...shares.keys()].sort((a, b) => a - b);
      if (JSON.stringify(got) !== JSON.stringify(dset)) return `shares of servers ${JSON.stringify(got)}, but the decryption set is ${JSON.stringify(dset)}`;
      const valid = new Map();
      for (const [pos, j] of dset.entries()) {
        const sh = shares.get(j);
        const ds = get(sh, 'd').map((x, c) => { const parts = splitBlob(x, fin.n, `share ${j}`); for (const q of parts) if (q[31] & 0x80) throw new VerifyError(`share ${j}: non-canonical encoding (top bit set)`); return parts; });
        const y = mul(st.vks.get(j), lam[pos]);
        const err = decShares(st.sess, j, name, y, fin.b, ds, get(sh, 'proof'), dset);
        if (err) return `server ${j}: ${err}`;
        valid.set(j, ds);
      }
      const cols = fin.a.map((col, c) => col.map((ab, i) => {
        let acc = point(ab, `final.a[${c}][${i}]`, true);
        for (const j of dset) acc = acc.subtract(point(valid.get(j)[c][i], `share ${j}`, true));
        return acc.toBytes();
      }));
      const spec = specs.get(name);
      const rows = decodeRows(cols, Number(get(spec, 'width')), get(spec, 'bound'));
      if (!Array.isArray(pub) || pub.length !== rows.length) return `published ${pub?.length} plaintexts, decrypted ${rows.length}`;
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i], q = pub[i];
        const same = r === null ? q === null : Array.isArray(q) && q.length === r.length && q.every((x, c) => Number(x) === r[c]);
        if (!same) return `published plaintext ${i} differs from the decryption`;
      }
      plain.set(name, rows);
      return null;
    })) return null;
  }
  return plain;
}

// ------------------------------------------------------------------ V-10 and per round
export function checkMixnetRun(runDir, cluster, transcripts, add, keys) {
  const servers = cluster.parties.filter((p) => p.role === 'mix-server').map((p) => p.name);
  const clients = cluster.parties.filter((p) => p.role === 'client').map((p) => p.name);
  const analyzer = cluster.parties.find((p) => p.role === 'analyzer').name;
  const pubs = [];
  for (const s of servers) if (s in transcripts) for (const e of transcripts[s].entries) if (e.dir === 'publish' && e.ty === RECORD_TYPE) pubs.push([s, e]);
  if (!pubs.length) { add('V-10', 'mix-net public record', false, 'no server published a record'); return null; }
  const byRound = new Map();
  for (const [publisher, e] of pubs) {
    let rec, rnd;
    try { rec = cbor.decode(blob(runDir, publisher, e.dg)); rnd = rec instanceof Map ? Number(get(rec, 'round', 0)) : -1; } catch (err) {
      add('V-10', 'mix-net public record', false, `unreadable record: ${err.message}`); return null;
    }
    if (!byRound.has(rnd)) byRound.set(rnd, []);
    byRound.get(rnd).push([publisher, rec]);
  }
  const rounds = [...byRound.keys()].sort((a, b) => a - b);
  if (!rounds.every((r, i) => r === i) || [...byRound.values()].some((v) => v.length !== 1)) {
    add('V-10', 'mix-net public record', false, `records per round {${rounds.map((r) => `${r}: ${byRound.get(r).length}`).join(', ')}} (expected exactly one per round, rounds 0..R-1)`);
    return null;
  }
  add('V-10', 'mix-net public record', true, `${rounds.length} record(s), one per round`);
  const outs = [];
  for (const rnd of rounds) {
    const [publisher, rec] = byRound.get(rnd)[0];
    const label = rounds.length === 1 ? 'mix-net' : `mix-net round ${rnd}`;
    let problem;
    try { problem = tieToWire(runDir, rec, publisher, servers, clients, analyzer, transcripts, rnd); } catch (err) { problem = `malformed record or message: ${err.message}`; }
    add('V-11', `${label} record matches the wire`, !problem, problem || `record published by ${publisher}: DKG, submissions, mix steps, decryption shares and plaintexts are the logged messages`);
    if (problem) return null;
    let agreed;
    try { agreed = inputAgreement(rec, servers, keys); } catch (err) { agreed = [false, `malformed record: ${err.message}`]; }
    if (!add('V-19', `${label} input agreement`, agreed[0], agreed[1])) return null;
    const plain = verifyRecord(rec, add, label);
    if (plain === null) return null;
    outs.push({ plain, rec });
  }
  abortsWithEvidence(runDir, servers, analyzer, transcripts, rounds.map((r) => String(get(byRound.get(r)[0][1], 'session_id'))), keys, add);
  return outs;
}
