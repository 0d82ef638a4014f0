// V-30: the MPC shuffler's output shares and malicious-abort checks (docs/spec/06-estimates.md
// V-30, S-1 .. S-4). Shamir sharing over GF(2^31 - 1); server j (0-based, cluster order) holds
// the evaluation at x = j + 1.
import crypto from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import * as cbor from './cbor.mjs';
import { blob } from './transcripts.mjs';
import { digest, objToArray, signedBy } from './mixnet.mjs';

export const P = 2 ** 31 - 1;
const PB = BigInt(P);

class Mismatch extends Error {}
const fail = (msg) => { throw new Mismatch(msg); };

// a * b mod P for 0 <= a, b < P, exact in doubles (every partial product is below 2^53)
const mulmod = (a, b) => (((a * (b >>> 16)) % P) * 65536 + a * (b & 0xffff)) % P;

function powmod(b, e) {
  let r = 1n;
  b %= PB;
  while (e > 0n) { if (e & 1n) r = (r * b) % PB; b = (b * b) % PB; e >>= 1n; }
  return r;
}

// S-1: Lagrange coefficients of the points xs at x0
export function lagrange(xs, x0) {
  return xs.map((xj, j) => {
    let num = 1n, den = 1n;
    xs.forEach((xk, k) => {
      if (k !== j) { num = (num * ((BigInt(x0 - xk) % PB + PB) % PB)) % PB; den = (den * ((BigInt(xj - xk) % PB + PB) % PB)) % PB; }
    });
    return Number((num * powmod(den, PB - 2n)) % PB);
  });
}

function combine(rows, lam, idx) {
  let acc = 0;
  for (let j = 0; j < lam.length; j++) acc = (acc + mulmod(rows[j][idx], lam[j])) % P;
  return acc;
}

// S-1: rows[j] = server j's shares (flat); true for the values whose m shares lie on one
// polynomial of degree <= t (interpolated from servers 0..t, checked at the others)
export function consistentMask(rows, t) {
  const n = rows[0].length;
  const ok = new Array(n).fill(true);
  const base = Array.from({ length: t + 1 }, (_, i) => i + 1);
  for (let j = t + 1; j < rows.length; j++) {
    const lam = lagrange(base, j + 1);
    for (let i = 0; i < n; i++) if (ok[i] && combine(rows, lam, i) !== rows[j][i]) ok[i] = false;
  }
  return ok;
}

export function reconstruct(rows, t) {
  const lam = lagrange(Array.from({ length: t + 1 }, (_, i) => i + 1), 0);
  return Array.from({ length: rows[0].length }, (_, i) => combine(rows, lam, i));
}

const isFieldList = (v) => Array.isArray(v) && v.every((x) => Number.isInteger(x) && x >= 0 && x < P);
const sameJson = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const toPlainMap = (v) => {
  if (v instanceof Map) { const o = {}; for (const [k, x] of v) o[String(k)] = toPlainMap(x); return o; }
  if (Array.isArray(v)) return v.map(toPlainMap);
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v;
  return v;
};

// S-2: one output chunk: {batches: {name: {shape, data}}, ...meta}
function decodeChunk(bytes, where) {
  const obj = cbor.decode(bytes);
  if (!(obj instanceof Map) || !(obj.get('batches') instanceof Map)) fail(`${where}: payload is not a map with a 'batches' map`);
  const arrays = new Map();
  for (const [k, v] of obj.get('batches')) {
    if (!(v instanceof Map) || v.size !== 2 || !v.has('shape') || !v.has('data')) fail(`${where}: batch '${k}' must have keys shape, data`);
    const shape = v.get('shape'), data = v.get('data');
    if (!Array.isArray(shape) || !shape.every((s) => Number.isInteger(s) && s >= 0)) fail(`${where}: batch '${k}' has a bad shape`);
    const count = shape.reduce((a, s) => a * s, 1);
    if (!(data instanceof Uint8Array) || data.length !== 4 * count) fail(`${where} batch '${k}': expected ${4 * count} bytes for shape [${shape}]`);
    const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const vals = new Array(count);
    for (let i = 0; i < count; i++) { vals[i] = dv.getUint32(4 * i, true); if (vals[i] >= P) fail(`${where} batch '${k}': values must lie in [0, ${P})`); }
    arrays.set(k, { shape, vals });
  }
  const meta = {};
  for (const [k, v] of obj) if (k !== 'batches') meta[k] = toPlainMap(v);
  return { arrays, meta };
}

// S-2: per round, the output shares `server` sent `analyzer` and the last chunk's meta
function serverOutputs(runDir, server, analyzer) {
  const chunks = new Map();
  for (const e of server.entries) {
    if (e.dir === 'send' && e.ty === 'mpc-output' && e.peer === analyzer) {
      if (!chunks.has(e.rd)) chunks.set(e.rd, []);
      chunks.get(e.rd).push(e);
    }
  }
  const out = new Map();
  for (const [rd, entries] of chunks) {
    const where = `${server.party} round ${rd} output`;
    if (!entries.every((e) => e.pub === true)) fail(`${where}: the shares are private transcript entries, not in the public record`);
    const blocks = [];
    let meta = {};
    for (const e of entries) { const c = decodeChunk(blob(runDir, server.party, e.dg), where); blocks.push(c.arrays); meta = c.meta; }
    if (meta.last !== true) fail(`${where}: the last chunk is not marked last`);
    const merged = new Map();
    for (const k of [...new Set(blocks.flatMap((b) => [...b.keys()]))].sort()) {
      const parts = blocks.filter((b) => b.has(k)).map((b) => b.get(k));
      if (new Set(parts.map((p) => JSON.stringify(p.shape.slice(1)))).size !== 1) fail(`${where}: chunks of batch '${k}' have different widths`);
      merged.set(k, { shape: [parts.reduce((a, p) => a + p.shape[0], 0), ...parts[0].shape.slice(1)], vals: parts.flatMap((p) => p.vals) });
    }
    out.set(rd, { shares: merged, meta });
  }
  return out;
}

function agree(metas, key, where) {
  const vals = metas.map((m) => m[key]);
  if (!vals.every((v) => sameJson(v, vals[0]))) fail(`${where}: the servers report different '${key}'`);
  return vals[0];
}

const rowsKey = (rows) => rows.map((r) => JSON.stringify(r)).sort();

// S-3: reconstruct a round and compare it with the analyzer's published artifact
function compareRound(rd, shares, metas, t, mode, bounds, published) {
  const where = `round ${rd}`;
  if (agree(metas, 'mode', where) !== mode) fail(`${where}: the servers ran mode ${JSON.stringify(metas[0].mode)}, not '${mode}'`);
  const rejected = agree(metas, 'rejected_rows', where) ?? {};
  const opened = agree(metas, 'invalid_rows', where) ?? {};
  const names = [...shares[0].keys()].sort();
  if (!shares.every((s) => sameJson([...s.keys()].sort(), names)) || !sameJson(names, Object.keys(bounds).sort())) fail(`${where}: the servers output batches [${names}], expected [${Object.keys(bounds).sort()}]`);
  const pubBatches = published.get('batches') instanceof Map ? published.get('batches') : new Map();
  const pubInvalid = published.get('invalid') instanceof Map ? published.get('invalid') : new Map();
  if (!sameJson([...pubBatches.keys()].sort(), names)) fail(`${where}: the analyzer published batches [${[...pubBatches.keys()].sort()}], the servers output [${names}]`);
  let checked = 0;
  for (const k of names) {
    const all = shares.map((s) => s.get(k));
    if (!all.every((a) => sameJson(a.shape, all[0].shape))) fail(`${where} batch '${k}': the servers' share arrays differ in shape`);
    const rows = all.map((a) => a.vals);
    if (!consistentMask(rows, t).every(Boolean)) fail(`${where} batch '${k}': the servers' output shares do not lie on one polynomial of degree ${t} (a server deviated)`);
    const vals = reconstruct(rows, t);
    checked += vals.length;
    const [n, w] = [all[0].shape[0], all[0].shape.slice(1).reduce((a, s) => a * s, 1)];
    const rej = Number(rejected[k] ?? 0);
    let want = [], wantInvalid;
    if (mode === 'open') {
      let bad = 0;
      for (let i = 0; i < n; i++) {
        const row = vals.slice(i * w, (i + 1) * w);
        if (row.some((v) => v >= bounds[k])) bad += 1; else want.push(row);
      }
      wantInvalid = bad + rej + Number(opened[k] ?? 0);
    } else {
      if (n !== 1 || vals.some((v) => v >= Math.floor(P / 2))) fail(`${where} batch '${k}': reconstructed counts are not a width-1 histogram`);
      vals.forEach((c, v) => { for (let i = 0; i < c; i++) want.push([v]); });
      wantInvalid = Number(opened[k] ?? 0) + rej;
    }
    const got = objToArray(pubBatches.get(k));
    const gw = got.shape.slice(1).reduce((a, s) => a * s, 1);
    const gotRows = Array.from({ length: got.shape[0] }, (_, i) => got.values.slice(i * gw, (i + 1) * gw));
    if (!sameJson(rowsKey(gotRows), rowsKey(want))) fail(`${where} batch '${k}': the analyzer published ${gotRows.length} messages that are NOT the multiset the servers output (${want.length} messages)`);
    const pi = pubInvalid.has(k) ? Number(pubInvalid.get(k)) : -1;
    if (pi !== wantInvalid) fail(`${where} batch '${k}': the analyzer published ${pubInvalid.get(k)} invalid messages, the servers' output gives ${wantInvalid}`);
  }
  return checked;
}

// S-4: the opened malicious-abort check values
function abortChecks(rd, metas, servers, t, security, multiset) {
  const where = `round ${rd}`;
  const ran = agree(metas, 'security', where);
  if (ran !== security) fail(`${where}: the servers ran security ${ran === undefined ? 'semi-honest (no mode recorded)' : JSON.stringify(ran)}, the cluster asks for '${security}'`);
  if (security !== 'malicious-abort') return 0;
  const checks = metas.map((m) => m.checks);
  const isObj = (c) => c !== null && typeof c === 'object' && !Array.isArray(c);
  if (!checks.every(isObj)) fail(`${where}: no malicious-abort check values from ${servers.filter((s, i) => !isObj(checks[i]))}`);
  const stack = (pathKeys, what) => {
    const rows = servers.map((s, i) => {
      let v = checks[i];
      for (const key of pathKeys) v = isObj(v) ? v[key] : undefined;
      if (!(Array.isArray(v) && v.every((x) => Number.isInteger(x)))) fail(`${where}: ${s} gives no shares of the ${what}`);
      return v;
    });
    if (new Set(rows.map((r) => r.length)).size !== 1) fail(`${where}: the servers give different numbers of ${what} shares`);
    if (!rows.every(isFieldList)) fail(`${where} ${what}: values must lie in [0, ${P})`);
    return rows;
  };
  let checked = 0;
  for (const name of Object.keys(isObj(checks[0].coins) ? checks[0].coins : {}).sort()) {
    const c = stack(['coins', name], `coin opening '${name}'`);
    if (!consistentMask(c, t).every(Boolean)) fail(`${where}: the coin opening '${name}' is inconsistent`);
    checked += c[0].length;
  }
  const clients = agree(checks, 'input_clients', where) ?? [];
  const inputs = stack(['inputs'], 'client-sharing checks');
  if (clients.length && inputs[0].length % clients.length) fail(`${where}: client-sharing checks do not match the clients checked`);
  if (clients.length) {
    const ok = consistentMask(inputs, t);
    const per = inputs[0].length / clients.length;
    const rejected = new Set(agree(metas, 'rejected_clients', where) ?? []);
    const bad = clients.filter((c, i) => !ok.slice(i * per, (i + 1) * per).every(Boolean) && !rejected.has(c));
    if (bad.length) fail(`${where}: the sharing of ${bad.join(', ')} failed the degree check but was used`);
    checked += inputs[0].length;
  }
  for (const [key, what] of [['mac', 'MAC check'], ['multiset', 'multiset check']]) {
    const batches = checks[0][key];
    const empty = !isObj(batches) || !Object.keys(batches).length;
    if (key === 'multiset' && !multiset && empty) continue;  // an option (mpc_multiset): the MAC check covers non-permutations
    if (empty) fail(`${where}: no ${what} values`);
    for (const b of Object.keys(batches).sort()) {
      const v = stack([key, b], `${what} of batch '${b}'`);
      if (!consistentMask(v, t).every(Boolean)) fail(`${where}: the servers' shares of the ${what} of batch '${b}' do not lie on one polynomial of degree ${t}`);
      if (reconstruct(v, t).some((x) => x !== 0)) fail(`${where}: the ${what} of batch '${b}' opens to a non-zero value (a server deviated) but the run was published`);
      checked += v[0].length;
    }
  }
  return checked;
}

// V-30; `boundsPerRound`: per round, batch name -> bound (the protocol's batches); returns
// {ok, detail, count}
export function checkMpcOutputs(runDir, cluster, transcripts, analyzer, boundsPerRound) {
  const servers = cluster.parties.filter((p) => p.role === 'mpc-server').map((p) => p.name);
  const params = cluster.params;
  const m = servers.length;
  const t = Number(params.mpc_threshold ?? Math.floor((m - 1) / 2));
  const mode = String(params.mpc_mode ?? 'open');
  const security = String(params.security ?? 'malicious-abort');
  const multiset = ['true', '1', 'yes', 'on'].includes(String(params.mpc_multiset ?? false).toLowerCase());
  let checked = 0, abortChecked = 0;
  try {
    if (m < 3 || !(t > 0 && 2 * t < m)) fail(`the cluster has ${m} MPC servers with threshold ${t}`);
    const missing = servers.filter((s) => !(s in transcripts));
    if (missing.length) fail(`no transcript of server(s) ${missing.join(', ')}`);
    const outs = servers.map((s) => serverOutputs(runDir, transcripts[s], analyzer.party));
    const published = analyzer.entries.filter((e) => e.dir === 'publish' && e.ty === 'shuffled').map((e) => cbor.decode(blob(runDir, analyzer.party, e.dg)));
    if (published.length !== boundsPerRound.length) fail(`${analyzer.party} published ${published.length} shuffled inputs for ${boundsPerRound.length} rounds`);
    for (let rd = 0; rd < published.length; rd++) {
      const lacking = servers.filter((s, i) => !outs[i].has(rd));
      if (lacking.length) fail(`round ${rd}: no public output shares from ${lacking.join(', ')}`);
      const metas = outs.map((o) => o.get(rd).meta);
      checked += compareRound(rd, outs.map((o) => o.get(rd).shares), metas, t, mode, boundsPerRound[rd], published[rd]);
      abortChecked += abortChecks(rd, metas, servers, t, security, multiset);
    }
  } catch (e) {
    if (!(e instanceof Mismatch)) throw e;
    return { ok: false, count: 0, detail: `${e.message} (${analyzer.party}'s publication is not tied to the servers)` };
  }
  return {
    ok: true, count: checked + abortChecked,
    detail: `${boundsPerRound.length} round(s): the analyzer's published input equals the multiset reconstructed from the ${m} servers' signed output shares; security ${security}: `
      + (security === 'malicious-abort' ? `the MAC (and, where present, multiset) checks open to 0 and every opened coin and client-sharing check is consistent (${abortChecked} values; sound while at most ${t} servers deviate)` : 'no checks (semi-honest mode: a deviating server can change the output)'),
  };
}

// ------------------------------------------------------------------ V-31 MPC input evidence
// (docs/spec/06-estimates.md V-31, N-1 .. N-6): re-judge the signed reports of a refused client
// sharing (published rounds) or of an input-check abort (aborted runs).
const REPS = 3;
const isMap = (v) => v instanceof Map;
const g = (m, k) => (isMap(m) ? m.get(k) : undefined);
const enc = (s) => new TextEncoder().encode(s);
const cat = (parts) => { const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0)); let o = 0; for (const p of parts) { out.set(p, o); o += p.length; } return out; };
const F = (raw) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(raw.length), false); return cat([b, raw]); };
const le32 = (vals) => { const b = new Uint8Array(4 * vals.length); const dv = new DataView(b.buffer); vals.forEach((v, i) => dv.setUint32(4 * i, Number(v), true)); return b; };
const hexOf = (u8) => Buffer.from(u8).toString('hex');
const num = (v) => (typeof v === 'bigint' ? Number(v) : v);
const isField = (v) => Number.isInteger(num(v)) && num(v) >= 0 && num(v) < P;

// N-1: coins(seed, name, n): ChaCha20(SHA-256(seed | name)), 31-bit words, 2^31 - 1 skipped
function coins(seed, name, n) {
  const key = sha256(cat([seed, enc('|' + name)]));
  const extra = 64 + Math.floor(n / 1e6);
  const ks = crypto.createCipheriv('chacha20', key, new Uint8Array(16)).update(new Uint8Array(4 * (n + extra)));
  const dv = new DataView(ks.buffer, ks.byteOffset, ks.byteLength);
  const out = [];
  for (let i = 0; out.length < n && i < n + extra; i++) { const v = dv.getUint32(4 * i, true) & 0x7fffffff; if (v !== P) out.push(v); }
  if (out.length < n) fail('coins: keystream exhausted');
  return out;
}
const pyShape = (s) => (s.length === 1 ? `(${s[0]},)` : `(${s.join(', ')})`);
// N-2
function shareDigest(label, client, block, index, server, salt, mask, arrays) {
  const parts = [enc('sdp-mpc-input-v1'), ...[enc(label), enc(client), enc(String(block)), enc(String(index)), enc(server), salt].map(F), F(le32(mask))];
  for (const name of [...arrays.keys()].sort()) { const a = arrays.get(name); parts.push(F(enc(name)), F(enc(pyShape(a.shape))), F(le32(a.vals))); }
  return hexOf(sha256(cat(parts)));
}
const coinSeed = (label, client, block, digests) => sha256(cat([enc('sdp-mpc-input-v1|coins'), ...[label, client, String(block), ...digests].map((s) => F(enc(s)))]));
function openings(arrays, mask, seed) {
  return mask.map((mu, r) => {
    let total = num(mu) % P;
    for (const name of [...arrays.keys()].sort()) {
      const a = arrays.get(name);
      const rho = coins(seed, `input|${name}|${r}`, a.vals.length);
      for (let i = 0; i < rho.length; i++) total = (total + mulmod(rho[i], a.vals[i])) % P;
    }
    return total;
  });
}
function statementValid(keys, session, client, m, block, st) {
  const body = g(st, 'body');
  if (!isMap(body)) return false;
  const dg = g(body, 'digests'), op = g(body, 'open');
  const ok = g(body, 'client') === client && num(g(body, 'block')) === block && typeof g(body, 'last') === 'boolean'
    && Array.isArray(dg) && dg.length === m && dg.every((d) => typeof d === 'string' && d.length === 64)
    && Array.isArray(op) && op.length === m && op.every((o) => Array.isArray(o) && o.length === REPS && o.every(isField));
  return ok && signedBy(keys, client, 'mpc-input', session, digest(body), g(st, 'sig'));
}
const statementsValid = (keys, session, client, m, sts) => Array.isArray(sts) && sts.length > 0
  && sts.every((st, b) => statementValid(keys, session, client, m, b, st) && g(g(st, 'body'), 'last') === (b === sts.length - 1));
function complaintVerdict(label, client, servers, j, sts, c) {
  const server = servers[j];
  let arrays, b, mask;
  try {
    b = num(g(c, 'block'));
    if (!Number.isInteger(b)) throw new Error('complaint without its block');
    if (b < 0 || b >= sts.length) throw new Error(`complaint about block ${b}, which the client never sent`);
    const salt = g(c, 'salt'); mask = g(c, 'mask');
    if (!(salt instanceof Uint8Array) || salt.length !== 32 || !Array.isArray(mask) || !mask.every(isField)) throw new Error('complaint without its salt and mask');
    if (!isMap(g(c, 'batches'))) throw new Error('complaint without its shares');
    arrays = new Map();
    for (const [name, v] of g(c, 'batches')) {
      const shape = g(v, 'shape')?.map(num), data = g(v, 'data');
      const count = Array.isArray(shape) ? shape.reduce((a, s) => a * s, 1) : -1;
      if (!(data instanceof Uint8Array) || data.length !== 4 * count) throw new Error(`complaint batch '${name}' malformed`);
      const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
      const vals = Array.from({ length: count }, (_, i) => dv.getUint32(4 * i, true));
      if (!vals.every((x) => x < P)) throw new Error(`complaint batch '${name}' not field elements`);
      arrays.set(name, { shape, vals });
    }
    const body = g(sts[b], 'body');
    if (shareDigest(label, client, b, j, server, g(c, 'salt'), mask, arrays) !== g(body, 'digests')[j]) return ['server', server, `${server}'s complaint against ${client} reveals shares that are not what ${client} signed for it (block ${b})`];
    const seed = coinSeed(label, client, b, g(body, 'digests'));
    if (sameJson(openings(arrays, mask, seed), g(body, 'open')[j].map(num))) return ['server', server, `${server} complained falsely against ${client}: the opening ${client} signed for it matches the shares it received (block ${b})`];
    return ['client', client, `${client} signed an opening for ${server} that its own shares to ${server} do not give (block ${b})`];
  } catch (e) {
    if (e instanceof Mismatch) throw e;
    return ['server', server, `${server}'s complaint against ${client} is malformed (${e.message})`];
  }
}
// N-4
function judge(keys, label, servers, t, client, reports) {
  const m = servers.length;
  const entries = reports.map((r) => g(g(r, 'clients'), client));
  for (let j = 0; j < m; j++) if (!statementsValid(keys, label, client, m, g(entries[j], 'statements'))) return ['server', servers[j], `${servers[j]}'s report gives ${client} statements ${client} never signed`];
  const lists = entries.map((e) => g(e, 'statements'));
  const complaints = [];
  entries.forEach((e, j) => { const c = g(e, 'complaint'); if (c !== null && c !== undefined) complaints.push(complaintVerdict(label, client, servers, j, lists[j], c)); });
  const bad = complaints.find((v) => v[0] === 'server');
  if (bad) return bad;
  for (let b = 0; b < Math.max(...lists.map((s) => s.length)); b++) {
    if (lists.some((s) => b >= s.length) || new Set(lists.map((s) => digest(g(s[b], 'body')))).size > 1) return ['client', client, `${client} signed two different statements for block ${b}`];
    const rows = g(g(lists[0][b], 'body'), 'open').map((o) => o.map(num));
    if (!consistentMask(rows, t).every(Boolean)) return ['client', client, `${client}'s signed openings of block ${b} are not of degree <= ${t} (its sharing is inconsistent)`];
  }
  return complaints.length ? complaints[0] : ['ok', null, ''];
}
function checkEvidence(keys, label, servers, t, ev) {
  const reps = g(ev, 'reports');
  if (!Array.isArray(reps) || reps.length !== servers.length) throw new Error('input evidence without the servers\' reports');
  const unsigned = servers.filter((s, j) => { const rep = g(reps[j], 'report'); return !(isMap(rep) && g(rep, 'server') === s && isMap(g(rep, 'clients')) && signedBy(keys, s, 'mpc-input-report', label, digest(rep), g(reps[j], 'sig'))); });
  if (unsigned.length) throw new Error(`the input reports of ${unsigned.join(', ')} are not signed by them`);
  const reports = reps.map((r) => g(r, 'report'));
  const clients = [...new Set(reports.flatMap((r) => [...g(r, 'clients').keys()]))].sort();
  const out = { clients: {}, servers: {} };
  for (const c of clients) { const [kind, who, why] = judge(keys, label, servers, t, c, reports); if (kind === 'client') out.clients[who] = why; else if (kind === 'server') out.servers[who] = why; }
  return out;
}
// per round, the decoded last output chunk (Maps kept: signatures are over canonical CBOR)
function rawMetas(runDir, server, analyzer) {
  const last = new Map();
  for (const e of server.entries) if (e.dir === 'send' && e.ty === 'mpc-output' && e.peer === analyzer && e.pub === true) last.set(e.rd, e);
  return new Map([...last].map(([rd, e]) => [rd, cbor.decode(blob(runDir, server.party, e.dg))]));
}
// V-31 on a published run (N-5) or an aborted one (N-6); returns [{ok, detail}]
export function checkMpcInputs(runDir, cluster, transcripts, keys) {
  const servers = cluster.parties.filter((p) => p.role === 'mpc-server').map((p) => p.name);
  const analyzer = cluster.parties.find((p) => p.role === 'analyzer')?.name;
  const t = Number(cluster.params.mpc_threshold ?? Math.floor((servers.length - 1) / 2));
  if (servers.some((s) => !(s in transcripts))) return [];
  const metas = servers.map((s) => rawMetas(runDir, transcripts[s], analyzer));
  const out = [];
  const rounds = [...new Set(metas.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  for (const rd of rounds) {
    const label = `sdp-mpc|${cluster.session}|round${rd}`;
    const ms = metas.map((m) => m.get(rd));
    ms.forEach((meta, j) => {  // N-6: an input-check abort names its culprit
      if (!isMap(meta) || !meta.has('abort') || !meta.has('input_evidence')) return;
      const culprit = g(meta, 'culprit');
      try {
        const r = checkEvidence(keys, label, servers, t, g(meta, 'input_evidence'));
        out.push(culprit in r.servers ? { ok: true, detail: `${servers[j]} aborted round ${rd}: server ${culprit} deviated: ${r.servers[culprit]}` } : { ok: false, detail: `${servers[j]} aborted round ${rd} with evidence that does not convict '${culprit}'` });
      } catch (e) { if (e instanceof Mismatch) throw e; out.push({ ok: false, detail: `${servers[j]} aborted round ${rd} with evidence that proves nothing (${e.message})` }); }
    });
    if (ms.some((m) => !isMap(m) || m.has('abort')) || cluster.params.security === 'semi-honest') continue;
    // N-5: a published round
    const faults = ms.map((m) => g(m, 'input_faults') ?? new Map());
    const evs = ms.map((m) => g(m, 'input_evidence') ?? new Map());
    const ck = (x) => hexOf(cbor.encode(x));
    if (faults.some((f) => ck(f) !== ck(faults[0])) || evs.some((e) => ck(e) !== ck(evs[0]))) { out.push({ ok: false, detail: `round ${rd}: the servers report different input faults or evidence` }); continue; }
    const named = isMap(faults[0]) ? [...faults[0].keys()].sort() : null;
    if (named === null) { out.push({ ok: false, detail: `round ${rd}: input_faults is not a map` }); continue; }
    if (!named.length && !(isMap(evs[0]) && evs[0].size)) { out.push({ ok: true, detail: `round ${rd}: no client was refused as deviating` }); continue; }
    if (!(isMap(evs[0]) && evs[0].size)) { out.push({ ok: false, detail: `round ${rd}: clients ${named} were refused without signed evidence` }); continue; }
    try {
      const r = checkEvidence(keys, label, servers, t, evs[0]);
      const convicted = Object.keys(r.clients).sort();
      const rejected = new Set((g(ms[0], 'rejected_clients') ?? []).map(String));
      if (Object.keys(r.servers).length) out.push({ ok: false, detail: `round ${rd}: the evidence convicts server(s) ${Object.keys(r.servers)} but the run went on` });
      else if (!sameJson(convicted, named)) out.push({ ok: false, detail: `round ${rd}: the servers refused ${named} as deviating; the signed evidence convicts ${convicted}` });
      else if (!named.every((c) => rejected.has(c))) out.push({ ok: false, detail: `round ${rd}: convicted clients were not rejected` });
      else out.push({ ok: true, detail: `round ${rd}: ${named.join(', ')} refused, each convicted by its own signed data` });
    } catch (e) { if (e instanceof Mismatch) throw e; out.push({ ok: false, detail: `round ${rd}: input evidence: ${e.message}` }); }
  }
  return out;
}
