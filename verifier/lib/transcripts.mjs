// Transcript layer of docs/spec/03-transcripts.md (checks V-1 .. V-7, spec version 1).
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { parse as parseToml } from 'smol-toml';
import { sha256 } from '@noble/hashes/sha2.js';
import { parse as parseJson, canonical, JFloat, plain } from './cjson.mjs';
import { concat, hex, utf8 } from './group.mjs';

const ENTRY_KEYS = ['i', 't', 'party', 'dir', 'prev', 'hash'];
const CONTROL_TYPES = new Set(['_bye', '_abort', '_busy']);
const NAME_RE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

const sha256hex = (b) => hex(sha256(b));

// TOML value -> canonical-JSON value (integers stay integers, floats are JFloat) -- spec C-2
function tomlToJ(v) {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return new JFloat(v);
  if (Array.isArray(v)) return v.map(tomlToJ);
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    const o = {};
    for (const k of Object.keys(v)) o[k] = tomlToJ(v[k]);
    return o;
  }
  return v;
}
const num = (v) => (typeof v === 'bigint' ? Number(v) : v);

// V-1 inputs: the cluster file, its digest (spec C-1..C-3)
export function loadCluster(runDir) {
  const text = fs.readFileSync(path.join(runDir, 'cluster.toml'), 'utf8');
  const doc = parseToml(text, { integersAsBigInt: true });
  const run = doc.run ?? {};
  const session = String(run.session ?? '');
  if (!/^[0-9a-f]{32}$/.test(session)) throw new Error('run.session must be 32 lowercase hex digits');
  const rawParties = doc.party;
  if (!Array.isArray(rawParties) || rawParties.length === 0) throw new Error('no [[party]] entries');
  const parties = [];
  const seen = new Set();
  for (const [k, p] of rawParties.entries()) {
    for (const f of ['name', 'role', 'host', 'port']) if (p[f] === undefined) throw new Error(`party #${k + 1}: needs name, role, host, port`);
    const spec = {
      name: String(p.name), role: String(p.role), host: String(p.host), port: BigInt(p.port),
      data: p.data === undefined ? '' : String(p.data),
      users: p.users === undefined ? null : BigInt(p.users),
    };
    if (!NAME_RE.test(spec.name)) throw new Error(`party #${k + 1}: invalid party name ${spec.name}`);
    if (seen.has(spec.name)) throw new Error(`party #${k + 1}: duplicate party name ${spec.name}`);
    if (!(spec.port > 0n && spec.port < 65536n)) throw new Error(`party #${k + 1}: port out of range`);
    if (spec.users !== null && spec.users < 0n) throw new Error(`party #${k + 1}: users must be >= 0`);
    seen.add(spec.name);
    parties.push(spec);
  }
  const rejoin = Number(num(run.rejoin_window ?? 0));
  if (!(rejoin >= 0 && rejoin <= 86400)) throw new Error('rejoin_window must lie in [0, 86400]');
  const params = run.params ?? {};
  const digestDoc = {
    session,
    protocol: String(run.protocol ?? ''),
    shuffler: String(run.shuffler ?? 'trusted'),
    phase_timeout: new JFloat(Number(num(run.phase_timeout ?? 60))),
    max_frame: BigInt(run.max_frame ?? 16n << 20n),
    ...(rejoin ? { rejoin_window: new JFloat(rejoin) } : {}),
    params: tomlToJ(params),
    parties: parties.map((p) => [p.name, p.role, p.host, p.port, p.data, p.users]),
  };
  const digest = sha256hex(utf8(canonical(digestDoc)));
  return {
    session, digest, parties,
    protocol: digestDoc.protocol, shuffler: digestDoc.shuffler,
    params: plain(tomlToJ(params)),
  };
}

export function certificate(runDir, name) {
  const p = path.join(runDir, 'certs', `${name}.crt`);
  let cert;
  try { cert = new crypto.X509Certificate(fs.readFileSync(p)); } catch (e) { throw new Error(`${p}: unreadable certificate (${e.code ?? e.message})`); }
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject);
  if (!cn || cn[1] !== name) throw new Error(`${p} is not ${name}'s certificate`);
  const key = cert.publicKey;
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`${p} does not hold an Ed25519 key`);
  return { key, fingerprint: crypto.createHash('sha256').update(cert.raw).digest('hex') };
}

// V-3: one transcript (spec T-1 .. T-9); returns {t, err}
// `filename` (default NAME.jsonl) names another transcript file of the party: a crashed
// incarnation's NAME.crashed-K.jsonl (spec T-11)
export function checkTranscript(runDir, party, session, key, filename = `${party}.jsonl`) {
  const file = path.join(runDir, 'transcripts', filename);
  const blobs = path.join(runDir, 'transcripts', `${party}.blobs`);
  const label = filename.replace(/\.jsonl$/, '');
  const t = { party, label, entries: [], status: '?', unsignedTail: 0, cluster: '', inc: 0, crashed: [] };
  if (!fs.existsSync(file)) return { t, err: `${party}: transcript ${filename} missing` };
  let prev = sha256hex(concat([utf8('sdp-transcript-v1'), Buffer.from(session, 'hex'), utf8(party)]));
  let covered = -1;
  const raw = fs.readFileSync(file);
  const lines = [];
  let start = 0;
  for (let k = 0; k < raw.length; k++) if (raw[k] === 0x0a) { lines.push(raw.subarray(start, k + 1)); start = k + 1; }
  if (start < raw.length) lines.push(raw.subarray(start));
  for (let idx = 0; idx < lines.length; idx++) {
    const lineno = idx + 1;
    const where = `${label} entry ${idx} (line ${lineno})`;
    let e;
    try { e = parseJson(new TextDecoder('utf-8', { fatal: true }).decode(lines[idx])); } catch { return { t, err: `${where}: not valid JSON` }; }
    if (e === null || typeof e !== 'object' || Array.isArray(e) || e instanceof JFloat) return { t, err: `${where}: missing fields ${JSON.stringify(ENTRY_KEYS)}` };
    const missing = ENTRY_KEYS.filter((k) => !(k in e));
    if (missing.length) return { t, err: `${where}: missing fields ${JSON.stringify(missing.sort())}` };
    if (e.i !== BigInt(idx) || e.party !== party) return { t, err: `${where}: index/party field is ${e.i}/${e.party}` };
    if (e.prev !== prev) return { t, err: `${where}: prev does not match the previous entry's hash` };
    const body = {};
    for (const k of Object.keys(e)) if (k !== 'hash' && k !== 'sig') body[k] = e[k];
    if (sha256hex(utf8(canonical(body))) !== e.hash) return { t, err: `${where}: hash does not match the entry's content` };
    if (idx === 0 && (e.dir !== 'open' || e.session !== session)) return { t, err: `${where}: first entry must open session ${session}` };
    if (idx === 0) {
      t.cluster = String(e.cluster ?? '');
      const inc = e.inc ?? 0n;  // spec T-1: the incarnation, a non-negative integer
      if (typeof inc !== 'bigint' || inc < 0n) return { t, err: `${where}: incarnation ${JSON.stringify(plain(inc))} is not a non-negative integer` };
      t.inc = Number(inc);
    }
    if (e.dir === 'checkpoint') {
      let ok = false;
      try {
        const sig = typeof e.sig === 'string' && /^([0-9a-fA-F]{2})*$/.test(e.sig) ? Buffer.from(e.sig, 'hex') : null;
        const h = /^[0-9a-f]{64}$/.test(e.hash) ? Buffer.from(e.hash, 'hex') : null;
        ok = sig !== null && h !== null && crypto.verify(null, concat([utf8('sdp-checkpoint-v1'), h]), key, sig);
      } catch { ok = false; }
      if (!ok) return { t, err: `${where}: invalid signature` };
      covered = idx;
    } else if ('sig' in e) return { t, err: `${where}: signature on a non-checkpoint entry` };
    // T-12 field types of message entries: pub a boolean, len and rd JSON integers >= 0
    if (['send', 'recv', 'publish'].includes(e.dir)) {
      if (typeof e.pub !== 'boolean') return { t, err: `${where}: pub ${JSON.stringify(plain(e.pub))} is not a boolean` };
      for (const f of ['len', 'rd']) if (typeof e[f] !== 'bigint' || e[f] < 0n) return { t, err: `${where}: ${f} ${JSON.stringify(plain(e[f]))} is not a non-negative integer` };
    }
    if (e.pub === true && ['send', 'recv', 'publish'].includes(e.dir)) {
      const bp = path.join(blobs, String(e.dg ?? ''));
      if (typeof e.dg !== 'string' || !fs.existsSync(bp) || !fs.statSync(bp).isFile()) return { t, err: `${where}: public payload blob ${e.dg} missing` };
      const data = fs.readFileSync(bp);
      if (sha256hex(data) !== e.dg || BigInt(data.length) !== e.len) return { t, err: `${where}: public payload blob does not match its digest` };
    }
    if (e.dir === 'close') t.status = e.status ?? '?';
    prev = e.hash;
    t.entries.push(plain(e));
  }
  if (!t.entries.length) return { t, err: `${label}: empty transcript` };
  const last = t.entries.length - 1;
  if (covered !== last && covered >= 0) {
    // spec T-9: an unsigned tail is dropped; the party then did not close cleanly
    t.unsignedTail = last - covered;
    t.entries = t.entries.slice(0, covered + 1);
    return { t, err: null };
  }
  if (covered !== last) return { t, err: `${label} entry ${covered + 1}: entries ${covered + 1}..${last} are not covered by a signed checkpoint (truncated transcript?)` };
  return { t, err: null };
}

export const closedCleanly = (t) => t.status === 'ok' && t.unsignedTail === 0;

// V-5 (spec 03, V-5 rules 0 .. 4 and the send rules)
export function checkConsistency(transcripts, report, clean) {
  // a party's incarnations: its verified crashed transcripts (T-11), then the current one
  const chains = {};
  for (const [p, t] of Object.entries(transcripts)) chains[p] = [...t.crashed, t];
  const last = {};
  for (const [p, c] of Object.entries(chains)) last[p] = c.length - 1;
  const sends = new Map();
  const recvs = new Map();
  const fail = (count, detail) => ({ ok: false, count, detail });
  for (const [party, chain] of Object.entries(chains)) {
    for (const [me, t] of chain.entries()) {
      const peerInc = {};
      for (const e of t.entries) {
        if (e.dir === 'rejoin') {
          const peer = e.peer, inc = e.inc, seen = peerInc[peer] ?? 0;
          if (typeof peer !== 'string' || !(peer in last)) return fail(0, `${t.label} entry ${e.i}: rejoin of ${JSON.stringify(peer)}, which left no transcript`);
          if (!Number.isInteger(inc) || !(seen < inc && inc <= last[peer])) return fail(0, `${t.label} entry ${e.i}: rejoin of ${peer} as incarnation ${JSON.stringify(inc)}: ${peer}'s own transcripts prove incarnations 0..${last[peer]}, and the incarnation must be later than ${seen} (the one before)`);
          peerInc[peer] = inc;
        } else if (e.dir === 'send' || e.dir === 'recv') {
          const pi = peerInc[e.peer] ?? 0;
          const key = JSON.stringify(e.dir === 'send' ? [party, e.peer, me, pi, e.msg] : [e.peer, party, pi, me, e.msg]);
          const seen = e.dir === 'send' ? sends : recvs;
          if (seen.has(key)) return fail(0, `${t.label} entry ${e.i}: message ${e.msg} on the channel with ${e.peer} logged twice (entry ${seen.get(key).i})`);
          seen.set(key, e);
        }
      }
    }
  }
  const fields = ['ty', 'ph', 'rd', 'len', 'dg', 'pub'];
  // receives a party signed it gave up on ('missed' entries): the sender was late
  const missed = new Map();
  for (const [party, chain] of Object.entries(chains)) for (const t of chain) for (const e of t.entries) if (e.dir === 'missed') missed.set(JSON.stringify([String(e.peer), party, e.ty]), e);
  const order = [...recvs.entries()].map(([k, r]) => [JSON.parse(k), r]).sort((x, y) => {
    const a = x[0][1], b = y[0][1];
    return a < b ? -1 : a > b ? 1 : (x[0][3] - y[0][3]) || (x[1].i - y[1].i);
  });
  for (const [key, r] of order) {
    const [sender, receiver, sInc, rInc, msg] = key;
    const where = `${chains[receiver][rInc].label} entry ${r.i}`;
    const s = sends.get(JSON.stringify(key));
    // rule 0: a sender incarnation that was restarted never sent a protocol message
    if (sender in transcripts && sInc < last[sender] && !String(r.ty).startsWith('_')) return fail(recvs.size, `${where}: received '${r.ty}' from ${sender}'s incarnation ${sInc}, which was restarted: a party that sent a protocol message cannot rejoin`);
    if (!s && rInc === last[receiver]) report.unconfirmed.add(`${receiver}/${r.i}`);
    if (!s && sender in transcripts && sInc < last[sender]) { report.warnings.push(`${where}: message ${msg} ('${r.ty}') from ${sender}'s incarnation ${sInc}, which crashed: unconfirmed, not relied on`); continue; }
    if (!s && !clean.has(sender)) { report.warnings.push(`${where}: message ${msg} ('${r.ty}') from ${sender} is not in ${sender}'s signed transcript: unconfirmed, not relied on`); continue; }
    if (!s) return fail(recvs.size, `${where}: received message ${msg} from ${sender} that ${sender} never logged as sent (its transcript is complete and closed)`);
    const diff = fields.filter((f) => s[f] !== r[f]);
    if (diff.length) return fail(recvs.size, `${where} vs ${chains[sender][sInc].label} entry ${s.i}: ${diff.join(', ')} differ`);
  }
  for (const [k, s] of sends) {
    const [sender, receiver, sInc, rInc] = JSON.parse(k);
    if (recvs.has(k) || !(receiver in transcripts) || CONTROL_TYPES.has(s.ty)) continue;
    const msg = `${chains[sender][sInc].label} entry ${s.i}: message '${s.ty}' to ${receiver} was never logged as received`;
    if (rInc < last[receiver]) { report.warnings.push(`${msg} (by ${receiver}'s incarnation ${rInc}, which crashed)`); continue; }
    const gaveUp = missed.get(JSON.stringify([sender, receiver, s.ty]));
    if (gaveUp !== undefined) { report.warnings.push(`${sender} was late: its '${s.ty}' (entry ${s.i}) never reached ${receiver} before ${receiver} stopped waiting for it (${receiver} entry ${gaveUp.i}, phase ${gaveUp.ph})`); continue; }
    if (clean.has(receiver)) return fail(sends.size, msg);
    report.warnings.push(`${msg} (${receiver} did not finish)`);
  }
  return { ok: true, count: recvs.size, detail: `${recvs.size} messages matched between sender and receiver` };
}

export function blob(runDir, party, dg) {
  return fs.readFileSync(path.join(runDir, 'transcripts', `${party}.blobs`, dg));
}
