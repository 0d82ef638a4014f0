// V-30: the MPC shuffler's output shares and malicious-abort checks (docs/spec/06-estimates.md
// V-30, S-1 .. S-4). Shamir sharing over GF(2^31 - 1); server j (0-based, cluster order) holds
// the evaluation at x = j + 1.
import * as cbor from './cbor.mjs';
import { blob } from './transcripts.mjs';
import { objToArray } from './mixnet.mjs';

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
    // S-4(c): the multiset check is opt-in (params.mpc_multiset); without it an empty map is allowed
    if (key === 'multiset' && !multiset && (batches === undefined || (isObj(batches) && !Object.keys(batches).length))) continue;
    if (!isObj(batches) || !Object.keys(batches).length) fail(`${where}: no ${what} values`);
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
      abortChecked += abortChecks(rd, metas, servers, t, security, ['true', '1', 'yes', 'on'].includes(String(params.mpc_multiset ?? false).toLowerCase()));
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
