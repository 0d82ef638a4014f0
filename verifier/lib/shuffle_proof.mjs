// V-16: proofs of shuffle (docs/spec/05-mixnet.md S-1 .. S-6) and the ciphertext lists they
// are about (spec E-3).
import crypto from 'node:crypto';
import {
  G, L, VerifyError, concat, sha512, fsHash, fsScalar, generatorSeeds, hashToPoint, le8, leInt, scalar, scalarVector, scalars,
  splitBlob, utf8,
} from './group.mjs';
import { M, deepEqual, get, isInt } from './util.mjs';
import { cachedFromNoble, decodeBlob, decodeList, decodeOne, derive, fromNoble, knownList, msmIsZero } from './wasm_group.mjs';

// ------------------------------------------------------------------ ciphertext lists (spec E-3)
export class Cts {
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

// decoded points of a column (wasm_group.mjs points), cached
const cache = new WeakMap();
export function pts(col, where) {
  if (cache.has(col)) return cache.get(col);
  const out = knownList(col) ?? Array.from(decodeList(col, (i) => `${where}[${i}]`));
  cache.set(col, out);
  return out;
}
export const cachedPts = (col) => cache.get(col);

// secret random weights, 64 random bytes each, drawn from a buffer refilled 1024 at a time
let pool = null, used = 0;
function randScalar() {
  if (pool === null || used === pool.length) { pool = crypto.randomBytes(64 * 1024); used = 0; }
  const v = leInt(pool.subarray(used, used + 64)) % L;
  used += 64;
  return v || 1n;
}

// ------------------------------------------------------------------ V-16 shuffle proofs (spec S-1..S-6)
const PROOF_KEYS = ['c', 'chat', 'that', 't1', 't2', 't3', 't4a', 't4b', 's1', 's2', 's3', 's4', 'shat', 'sprime'];
function parseProof(proof, n, w, where) {
  if (!(proof instanceof Map)) throw new VerifyError(`${where}: proof must be a map`);
  const missing = PROOF_KEYS.filter((k) => !proof.has(k));
  if (missing.length) throw new VerifyError(`${where}: proof lacks ${missing}`);
  const p = {};
  for (const k of ['c', 'chat', 'that']) { p[k + 'Raw'] = splitBlob(proof.get(k), n, `${where}.${k}`); p[k] = Array.from(decodeBlob(proof.get(k), n, `${where}.${k}`)); }
  for (const k of ['t1', 't2', 't3']) { p[k + 'Raw'] = proof.get(k); p[k] = decodeOne(proof.get(k), `${where}.${k}`); }
  for (const k of ['t4a', 't4b']) {
    const v = proof.get(k);
    if (!Array.isArray(v) || v.length !== w) throw new VerifyError(`${where}.${k}: expected ${w} elements`);
    p[k + 'Raw'] = v; p[k] = v.map((x, j) => decodeOne(x, `${where}.${k}[${j}]`));
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
// (points of wasm_group.mjs; `pk` a @noble/curves point)
function shuffleEquations(sess, step, batch, pkPoint, inp, out, proof, gens) {
  const G_ = cachedFromNoble(G), pk = cachedFromNoble(pkPoint);
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
  eqs.push(['permutation commitments do not sum to sum(H_i) (eq. 1)', [[p.s1, G_], [-1n, p.t1], ...p.c.map((c) => [-ch, c]), ...Hs.map((h) => [ch, h])]]);
  eqs.push(['chain end is not a commitment to prod(u) (eq. 2)', [[p.s2, G_], [-1n, p.t2], [-ch, p.chat[n - 1]], [ch * prodU, H]]]);
  eqs.push(['permutation commitment inconsistent with responses (eq. 3)', [[p.s3, G_], ...Hs.map((h, i) => [sp[i], h]), [-1n, p.t3], ...p.c.map((c, i) => [-ch * u[i], c])]]);
  for (let j = 0; j < w; j++) {
    eqs.push([`output is not a re-encryption of the input (eq. 4a, component ${j})`, [[p.s4[j], pk], ...outA[j].map((x, i) => [sp[i], x]), [-1n, p.t4a[j]], ...inA[j].map((x, i) => [-ch * u[i], x])]]);
    eqs.push([`output is not a re-encryption of the input (eq. 4b, component ${j})`, [[p.s4[j], G_], ...outB[j].map((x, i) => [sp[i], x]), [-1n, p.t4b[j]], ...inB[j].map((x, i) => [-ch * u[i], x])]]);
  }
  for (let i = 0; i < n; i++) {
    eqs.push([`chain step ${i} fails (eq. 5)`, [[sh[i], G_], [sp[i], i === 0 ? H : p.chat[i - 1]], [-1n, p.that[i]], [-ch, p.chat[i]]]]);
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
const holds = (acc) => msmIsZero([...acc.keys()], [...acc.values()]);

// one step alone: its batched check, then each equation alone to name the one that fails
function checkStep({ where, eqs }) {
  const acc = new Map();
  accumulate(acc, eqs);
  if (holds(acc)) return;
  for (const [name, terms] of eqs) {
    if (!msmIsZero(terms.map((x) => x[1]), terms.map((x) => x[0]))) throw new VerifyError(`${where}: ${name}`);
  }
  throw new VerifyError(`${where}: batched shuffle equation fails`);
}

// V-16 for one batch: the mix steps' proofs from the accepted inputs `input` (a Cts) to the last
// step's output, which is returned; a failure throws VerifyError naming the step and equation
export function checkMixes(sess, pk, name, input, mixes) {
  let prev = input;
  let gens = null;
  // every step's equations in one combination; on failure each step alone names the first
  // failing step and equation (spec S-5)
  const acc = new Map(), steps = [];
  for (const mix of mixes) {
    const step = get(mix, 'server');
    const b = get(get(mix, 'batches'), name);
    const out = Cts.fromObj(get(b, 'output'), `mix[${step}].${name}.output`);
    if (input.n < 2) {
      if (!deepEqual(out.toObj(), input.toObj()) || get(b, 'proof') !== null) throw new VerifyError(`mix[${step}].${name}: a batch of < 2 messages must be carried over`);
      continue;
    }
    if (gens === null) {
      const n = input.n;
      gens = [fromNoble(hashToPoint(utf8('sdp-mixnet-v1|'), utf8('shuffle-H'), sess, utf8(name))),
        Array.from(derive(generatorSeeds(concat([utf8('sdp-mixnet-v1|shuffle-Hi|'), sess, utf8('|'), utf8(name)]), n)))];
    }
    const args = [sess, step, name, pk, prev, out, get(b, 'proof'), gens];
    accumulate(acc, shuffleEquations(...args).eqs);
    steps.push(args);
    prev = out;
  }
  if (steps.length && !holds(acc)) {
    for (const args of steps) checkStep(shuffleEquations(...args));
    throw new VerifyError(`mixes of ${name}: batched shuffle equations fail`);
  }
  return prev;
}
