// Mix-net checks of docs/spec/05-mixnet.md (V-10 .. V-18, spec version 1).
import crypto from 'node:crypto';
import * as cbor from './cbor.mjs';
import {
  G, L, VerifyError, concat, sha256, fsHash, fsScalar, hex, inv, le8, leInt, mod, mul, mulBase, scalar,
  scalarVector, splitBlob, utf8,
} from './group.mjs';
import { blob } from './transcripts.mjs';
import { screen, submitters } from './submissions.mjs';
import { verifyDkg } from './dkg.mjs';
import { Cts, cachedPts, checkMixes } from './shuffle_proof.mjs';
import { decodeList, msmPoint, rowSums } from './wasm_group.mjs';
import { M, deepEqual, get, objToArray } from './util.mjs';

const RECORD_TYPE = 'mixnet.record';
const EMBED_BYTES = 30;
export { objToArray };
export const digest = (obj) => hex(sha256(cbor.encode(obj)));
const sentBy = (t, ty) => t.entries.filter((e) => e.dir === 'send' && e.ty === ty && e.pub);

// ------------------------------------------------------------------ V-18 decryption (spec Q-1..Q-4)
function lagrange0(xs) {
  return xs.map((xi, i) => {
    let num = 1n, den = 1n;
    xs.forEach((xk, k) => { if (k !== i) { num = (num * BigInt(xk)) % L; den = mod(den * (BigInt(xk) - BigInt(xi))); } });
    return (num * inv(den)) % L;
  });
}
// `out.shares`: the decoded shares (flat, component by component) when they are valid
function decShares(sess, server, batch, y, bs, ds, proof, dset, out) {
  if (ds.length !== bs.length || ds.some((d, j) => d.length !== bs[j].length)) return 'share count does not match ciphertexts';
  let seed, bsum, dsum, e, s;
  try {
    seed = fsHash('dec-rlc', sess, server, batch, concat(dset.map((j) => le8(j))), bs.length, ...bs.map(concat), ...ds.map(concat));
    const flatB = bs.flat(), flatD = ds.flat();
    const rho = scalarVector(seed, flatB.length);
    // the ciphertexts were decoded by V-16 (when they were mixed): valid, so the same outcome
    const bp = bs.every((col) => cachedPts(col)) ? bs.flatMap((col) => cachedPts(col)) : decodeList(flatB, (i) => `ciphertext[${i}]`);
    bsum = msmPoint(bp, rho);
    out.shares = decodeList(flatD, (i) => `share[${i}]`);
    dsum = msmPoint(out.shares, rho);
    e = scalar(get(proof, 'e'), 'proof.e');
    s = scalar(get(proof, 's'), 'proof.s');
  } catch (err) { return `invalid share or proof: ${err.message}`; }
  const T1 = mulBase(s).subtract(mul(y, e)), T2 = mul(bsum, s).subtract(mul(dsum, e));
  const c = fsScalar('dleq|dec', seed, G.toBytes(), y.toBytes(), bsum.toBytes(), dsum.toBytes(), T1.toBytes(), T2.toBytes());
  return c === e ? null : 'decryption-share proof (DLEQ) fails';
}

// a_i - sum_j d_ji of one ciphertext component c (encodings); the shares are decoded (by
// decShares), the a_i were decoded by V-16 when the batch was mixed (so valid)
function plaintextColumn(aCol, shareCols, c) {
  const a = cachedPts(aCol) ?? decodeList(aCol, (i) => `final.a[${c}][${i}]`, true);
  return rowSums([a, ...shareCols], ((1 << (shareCols.length + 1)) - 1) & ~1);
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
      current.set(name, checkMixes(st.sess, st.pk, name, inputs.get(name), mixes));
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
        const dec = {};
        const err = decShares(st.sess, j, name, y, fin.b, ds, get(sh, 'proof'), dset, dec);
        if (err) return `server ${j}: ${err}`;
        valid.set(j, dec.shares);
      }
      const cols = fin.a.map((col, c) => plaintextColumn(col, dset.map((j) => valid.get(j).slice(c * fin.n, (c + 1) * fin.n)), c));
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
