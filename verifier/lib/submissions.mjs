// V-14 client submissions (docs/spec/05-mixnet.md V-14, P-1, P-2): screening and proofs.
import crypto from 'node:crypto';
import { G, L, VerifyError, concat, fsScalar, hex, leInt, scalar } from './group.mjs';
import { get, isInt } from './util.mjs';
import { cachedFromNoble, decodeOne, msmIsZero } from './wasm_group.mjs';

// ------------------------------------------------------------------ V-14 client submissions (spec P-1)
// the proof's equations s_j G = T_j + e b_j as {s, t, b, e}, or a rejection reason (rule 7)
function clientProofEq(sess, client, batch, index, a, b, proof) {
  // spec P-1: proof {t: [T_j], s: [s_j]}; e = H(client-pok, ..., T)
  try {
    a.forEach((x, j) => decodeOne(x, `a[${j}]`));
    const bp = b.map((x, j) => decodeOne(x, `b[${j}]`));
    const s = get(proof, 's'), t = get(proof, 't');
    if (!(proof instanceof Map) || !Array.isArray(s) || !Array.isArray(t) || s.length !== b.length || t.length !== b.length) return 'malformed proof';
    const tp = t.map((x, j) => decodeOne(x, `proof.t[${j}]`));
    const ss = s.map((x, j) => scalar(x, `proof.s[${j}]`));
    const e = fsScalar('client-pok', sess, client, batch, index, concat(a), concat(b), concat(t));
    return { s: ss, t: tp, b: bp, e };
  } catch (err) {
    return `invalid element or scalar: ${err.message}`;
  }
}
const PROOF_FAILS = 'proof of knowledge does not verify for this client id, batch and index';
function clientProof(sess, client, batch, index, a, b, proof) {
  const q = clientProofEq(sess, client, batch, index, a, b, proof);
  if (typeof q === 'string') return q;
  const g = cachedFromNoble(G);
  return q.s.every((sj, j) => msmIsZero([g, q.t[j], q.b[j]], [sj, -1n, -q.e])) ? null : PROOF_FAILS;
}
// all equations at once (spec V-14 rule 7, S-5): sum_ij r_ij (s_ij G - T_ij - e_i b_ij) = 0
function proofsHold(eqs) {
  const P = [cachedFromNoble(G)], S = [0n];
  let rand = null, used = 0;
  for (const q of eqs) {
    q.s.forEach((sj, j) => {
      if (rand === null || used === rand.length) { rand = crypto.randomBytes(16 * 4096); used = 0; }
      const r = leInt(rand.subarray(used, used + 16)) || 1n;
      used += 16;
      S[0] = (S[0] + r * sj) % L;
      P.push(q.t[j], q.b[j]); S.push(-r, -r * q.e);
    });
  }
  return msmIsZero(P, S);
}
// V-14 screening; `batched`: check every proof in one random linear combination first, the
// submissions screened as if every proof held; if the combination fails, screen again one by
// one (the outcome is the same: rule 7 is the last rule, so a proof decides only its own
// submission, and the batch holds only if every accepted proof holds)
export function screen(sess, specs, subs, parties, batched = true) {
  if (parties.length !== subs.length) throw new VerifyError(`${parties.length} submitting parties for ${subs.length} submissions`);
  const accepted = new Map([...specs.keys()].map((n) => [n, []]));
  const rejected = [];
  const seen = new Set();
  const keys = new Set();
  const eqs = [];
  subs.forEach((s, idx) => {
    let reason = null, client = null, batch = null, index, a, b;
    if (!(s instanceof Map)) reason = 'malformed submission';
    else {
      client = get(s, 'client'); batch = get(s, 'batch'); index = get(s, 'index');
      const ct = get(s, 'ct');
      if (client === undefined || batch === undefined || index === undefined || !(ct instanceof Map) || !ct.has('a') || !ct.has('b') || !s.has('proof')) reason = 'malformed submission';
      else if (typeof batch !== 'string' || !specs.has(batch)) reason = `wrong batch ${batch}`;
      else if (!isInt(index) || index < 0) reason = 'bad message index';
      else {
        a = ct.get('a'); b = ct.get('b');
        const comps = Number(get(specs.get(batch), 'components'));
        if (!(Array.isArray(a) && Array.isArray(b) && a.length === comps && b.length === comps)) reason = `ciphertext must have ${comps} components`;
        else if (![...a, ...b].every((x) => x instanceof Uint8Array)) reason = 'invalid element: not bytes';
      }
    }
    if (reason === null) {
      client = boundClientId(parties[idx], String(client));
      const key = JSON.stringify([client, batch, String(index)]);
      if (keys.has(key)) reason = 'replayed message index';
      else if (b.some((x) => seen.has(hex(x)))) reason = 'replayed or duplicate ciphertext';
      else if (batched) {
        const q = clientProofEq(sess, client, batch, index, a, b, get(s, 'proof'));
        if (typeof q === 'string') reason = q; else eqs.push(q);
      } else reason = clientProof(sess, client, batch, index, a, b, get(s, 'proof'));
      if (reason === null) { accepted.get(batch).push(idx); keys.add(key); b.forEach((x) => seen.add(hex(x))); return; }
    }
    rejected.push({ index: idx, party: parties[idx], client: s instanceof Map ? get(s, 'client') : null, batch, reason });
  });
  if (batched && !proofsHold(eqs)) return screen(sess, specs, subs, parties, false);
  return { accepted, rejected };
}

// spec P-2: a submission's client id is namespaced by the client party that sent it
export const boundClientId = (party, client) => `${party}/${client}`;
export const submitters = (parts) => parts.flatMap((p) => Array(Number(get(p, 'count'))).fill(String(get(p, 'party'))));

