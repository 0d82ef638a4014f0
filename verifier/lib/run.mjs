// The order of the checks of a run directory (docs/spec/README.md, spec version 1).
import fs from 'node:fs';
import path from 'node:path';
import * as cbor from './cbor.mjs';
import { parse as parseJson, plain } from './cjson.mjs';
import { blob, certificate, checkConsistency, checkTranscript, closedCleanly, loadCluster } from './transcripts.mjs';
import { checkMixnetRun, objToArray } from './mixnet.mjs';
import { checkIncarnations, crashedFiles, restartLine } from './incarnations.mjs';
import { ESTIMATORS, batchBounds } from './estimates.mjs';
import { checkMpcInputs, checkMpcOutputs } from './mpc.mjs';
import { checkLedger } from './ledger.mjs';
import { close } from './compare.mjs';
import { checkReleases, checkStatement } from './privacy.mjs';

// roles a published run may lose (spec V-4)
const TOLERATED = { trusted: ['client'], mpc: ['client'], mixnet: ['client', 'mix-server'] };

export function runChecks(runDir, trust) {
  const report = { checks: [], warnings: [], notChecked: [], unconfirmed: new Set() };
  let cpu = process.cpuUsage();
  const add = (id, name, ok, detail, count = 0) => {
    const now = process.cpuUsage(cpu);  // CPU seconds spent since the previous check
    cpu = process.cpuUsage();
    report.checks.push({ id, name, ok, count, detail, cpu_s: Math.round((now.user + now.system) / 1e4) / 100 });
    return ok;
  };
  // V-1 cluster file
  let cluster;
  try { cluster = loadCluster(runDir); } catch (e) { add('V-1', 'run directory', false, `cluster.toml unreadable: ${e.message}`); return report; }
  if (trust !== null && (trust.session !== cluster.session || trust.cluster_sha256 !== cluster.digest)) {
    add('V-1', 'run directory', false, 'cluster.toml is not the cluster of the trust anchor (session or content differ)'); return report;
  }
  add('V-1', 'run directory', true, `session ${cluster.session}, cluster digest ${cluster.digest.slice(0, 16)}...`);
  // V-2 certificates
  const names = cluster.parties.map((p) => p.name);
  const keys = {};
  for (const n of names) {
    let c;
    try { c = certificate(runDir, n); } catch (e) { add('V-2', 'certificates', false, `${n}: ${e.message}`); return report; }
    if (trust !== null && trust.fingerprints[n] !== c.fingerprint) {
      add('V-2', 'certificates', false, `${n}: certificate fingerprint ${c.fingerprint.slice(0, 16)}... is not the trusted ${String(trust.fingerprints[n]).slice(0, 16)}... (replaced certificate?)`); return report;
    }
    keys[n] = c.key;
  }
  if (trust === null) report.warnings.push('certificates were taken from the run directory itself (no --trust): not an independent check');
  else if (trust.anchor !== 'per-host') report.warnings.push('one-process anchor (spec 03): every key was made by one process, so whoever made them could have signed every transcript; the checks prove consistency, not who signed');
  add('V-2', 'certificates', true, trust === null ? 'one Ed25519 certificate per party, TRUSTED FROM THE RUN DIRECTORY' : 'one Ed25519 certificate per party, fingerprints match the trust anchor');
  // V-3 transcripts
  const transcripts = {};
  let failure = null, entries = 0, crashedEntries = 0;
  for (const n of names) {
    if (!fs.existsSync(path.join(runDir, 'transcripts', `${n}.jsonl`))) {
      if (crashedFiles(runDir, n).length) { failure = `${n}: crashed transcripts but no transcript of its last incarnation`; break; }
      report.warnings.push(`${n} left no transcript (it did not take part)`); continue;
    }
    const { t, err } = checkTranscript(runDir, n, cluster.session, keys[n]);
    if (err) { failure = err; break; }
    if (t.cluster !== cluster.digest) { failure = `${n} entry 0: the transcript was opened for another cluster (recorded ${t.cluster.slice(0, 16) || 'nothing'}..., cluster.toml gives ${cluster.digest.slice(0, 16)}...): cluster.toml was changed after the run`; break; }
    failure = checkIncarnations(runDir, t, cluster.session, keys[n], cluster.digest);
    if (failure) break;
    if (t.unsignedTail) report.warnings.push(`${n} did not finish: its last ${t.unsignedTail} transcript entries are not signed and were ignored`);
    entries += t.entries.length;
    crashedEntries += t.crashed.reduce((a, c) => a + c.entries.length, 0);
    transcripts[n] = t;
  }
  if (failure === null) for (const t of Object.values(transcripts)) if (t.crashed.length) report.warnings.push(restartLine(t, transcripts));  // T-13
  add('V-3', 'transcript chains and signatures', failure === null, failure ?? `${Object.keys(transcripts).length} transcripts, ${entries} entries${crashedEntries ? ` (and ${crashedEntries} of crashed incarnations)` : ''}, hash chains intact, checkpoints signed, cluster file as recorded`, entries);
  if (failure) return report;
  // V-4 party status
  const clean = new Set(Object.keys(transcripts).filter((n) => closedCleanly(transcripts[n])));
  const notClean = names.filter((n) => !clean.has(n)).sort();
  const roles = Object.fromEntries(cluster.parties.map((p) => [p.name, p.role]));
  const mayFail = cluster.protocol === 'txpub' ? [] : (TOLERATED[cluster.shuffler] ?? []);
  const needed = notClean.filter((n) => !mayFail.includes(roles[n]));
  const published = fs.existsSync(path.join(runDir, 'result.json'));
  const statusOk = !(published && needed.length);
  if (!add('V-4', 'party status (signed)', statusOk, `${clean.size} of ${names.length} parties closed cleanly` + (notClean.length ? `; did not: ${notClean.join(', ')}` : '') + (statusOk ? '' : ` -- a published run needs ${needed.join(', ')} to have closed cleanly`))) return report;
  // V-5 cross-party consistency
  const cons = checkConsistency(transcripts, report, clean);
  if (!add('V-5', 'cross-party consistency', cons.ok, cons.detail, cons.count)) return report;
  // V-6 publication
  // a tolerated party's signed data report is not relied on (spec V-6)
  const publishers = Object.keys(transcripts).filter((n) => transcripts[n].entries.some((e) => e.dir === 'publish' && !(mayFail.includes(roles[n]) && e.ty === 'data-report'))).sort();
  // only a published run relies on what its parties published; V-7 decides the others (spec V-6)
  const badPub = published ? publishers.filter((n) => !clean.has(n)) : [];
  if (badPub.length || (published && !publishers.length)) {
    add('V-6', 'publication', false, badPub.length ? `${badPub.join(', ')} published but did not close its transcript cleanly` : "result.json exists but no party's signed transcript published anything");
    return report;
  }
  // V-7 run completed; a privacy refusal the analyzer signed is a complete run (spec V-7)
  const refusal = gateRefusal(transcripts, roles);
  if (refusal !== null && !published) { add('V-7', 'run completed', true, `refused, nothing published: ${refusal}`); return report; }
  const aborted = fs.existsSync(path.join(runDir, 'ABORTED.json'));
  if (aborted || !published) {
    if (cluster.shuffler === 'mpc') for (const r of checkMpcInputs(runDir, cluster, transcripts, keys)) add('V-31', 'MPC input evidence', r.ok, r.detail);
    add('V-7', 'run completed', false, aborted ? 'the run was aborted (ABORTED.json): transcripts checked, nothing was published' : 'no result.json: nothing was published');
    return report;
  }
  // V-8 privacy marking (informative)
  const seed = cluster.params.seed;
  add('V-8', 'privacy', true, seed === undefined ? 'client randomness private (CSPRNG-seeded at each client)' : `SIMULATION WITHOUT PRIVACY: seed ${seed} is in the public cluster file`);
  try {
    // V-9 the signed privacy statement from the public parameters (spec 07)
    if (cluster.protocol !== 'txpub') {
      const analyzer = cluster.parties.find((p) => p.role === 'analyzer')?.name;
      const privs = analyzer === undefined ? [] : transcripts[analyzer].entries.filter((e) => e.dir === 'publish' && e.ty === 'privacy');
      if (privs.length !== 1) { add('V-9', 'privacy statement', false, `${analyzer} published ${privs.length} privacy statements (expected 1)`); return report; }
      const st = checkStatement(cluster, toPlain(cbor.decode(blob(runDir, analyzer, privs[0].dg))));
      if (!add('V-9', 'privacy statement', st.ok, st.detail)) return report;
      for (const u of st.unchecked) report.notChecked.push(u);
    }
    protocolChecks(runDir, cluster, transcripts, add, report, keys);
  } catch (e) {  // a malformed artifact must not crash the verifier (spec: the check fails)
    add('V-20', 'protocol checks', false, `malformed artifact: ${e.message}`);
  }
  return report;
}

// the privacy gate's refusal, if the analyzer signed it closed with one and published no estimate
function gateRefusal(transcripts, roles) {
  for (const [n, t] of Object.entries(transcripts)) {
    if (roles[n] !== 'analyzer' || t.unsignedTail) continue;
    if (t.entries.some((e) => e.dir === 'publish' && e.ty === 'estimate')) continue;
    for (const e of t.entries) if (e.dir === 'close' && e.status === 'aborted' && String(e.reason ?? '').includes('privacy gate refused')) return String(e.reason ?? '');
  }
  return null;
}

function protocolChecks(runDir, cluster, transcripts, add, report, keys) {
  const analyzer = cluster.parties.find((p) => p.role === 'analyzer')?.name;
  let multisets = null;
  if (cluster.shuffler === 'mixnet' && cluster.protocol !== 'txpub') {
    const outs = checkMixnetRun(runDir, cluster, transcripts, add, keys);
    if (outs === null) return report;
    multisets = outs.map((o) => new Map([...o.plain].map(([name, rows]) => [name, rows.filter((r) => r !== null)])));
  } else if (cluster.protocol === 'txpub') {
    report.notChecked.push('txpub protocol checks are not in spec version 1');
    return report;
  } else if (cluster.shuffler === 'mpc') {
    const bounds = batchBounds(cluster);
    if (bounds === null) report.notChecked.push(`V-30 MPC output shares and abort checks: the batches of protocol ${cluster.protocol} are not known to this verifier`);
    else {
      const v30 = checkMpcOutputs(runDir, cluster, transcripts, transcripts[analyzer], bounds);
      if (!add('V-30', 'MPC output shares and abort checks', v30.ok, v30.detail, v30.count)) return report;
      for (const r of checkMpcInputs(runDir, cluster, transcripts, keys)) if (!add('V-31', 'MPC input evidence', r.ok, r.detail)) return report;
    }
    multisets = shuffledInputs(runDir, transcripts[analyzer], (e) => e.dir === 'publish' && e.ty === 'shuffled', report, add);
    if (multisets === false) return report;
  } else if (cluster.shuffler === 'trusted') {
    multisets = shuffledInputs(runDir, transcripts[analyzer], (e) => e.dir === 'recv' && e.ty === 'shuffled', report, add);
    if (multisets === false) return report;
  }
  if (analyzer === undefined) return report;
  checkPublished(runDir, transcripts[analyzer], add, report, cluster, multisets);
  return report;
}

// Estimator inputs of trusted and MPC runs (spec 06, "Inputs of the estimators"): the rows of
// every batch of the analyzer's public 'shuffled' entries; null (not supported) with fakes or
// a crowd threshold, false after a failed check.
function shuffledInputs(runDir, t, pick, report, add) {
  const ins = t.entries.filter(pick);
  if (!ins.every((e) => e.pub)) { add('V-21', 'recompute estimate', false, `${t.party} logged a private shuffled input`); return false; }
  const shaky = ins.filter((e) => report.unconfirmed.has(`${t.party}/${e.i}`)).map((e) => e.i);
  if (shaky.length) { add('V-21', 'recompute estimate', false, `${t.party} entries ${shaky}: the shuffled input is not in the sender's signed transcript, so the estimate cannot rest on it`); return false; }
  const out = [];
  for (const e of ins) {
    const msg = cbor.decode(blob(runDir, t.party, e.dg));
    if (!(msg instanceof Map) || msg.has('fakes') || msg.has('threshold') || msg.has('withheld')) return null;
    const batches = new Map();
    for (const [name, obj] of msg.get('batches')) {
      const a = objToArray(obj);
      const w = a.shape[1] ?? 1;
      batches.set(name, Array.from({ length: a.shape[0] }, (_, i) => a.values.slice(i * w, (i + 1) * w)));
    }
    out.push(batches);
  }
  return out;
}

// V-20 exactly one signed estimate; V-21 recomputed estimate; V-22 result.json equals the signed artifacts
function checkPublished(runDir, t, add, report, cluster, multisets) {
  const pubs = t.entries.filter((e) => e.dir === 'publish' && e.ty === 'estimate');
  if (!add('V-20', 'published estimate', pubs.length === 1, `${t.party} published ${pubs.length} estimate(s) (expected 1)`)) return;
  const published = toPlain(cbor.decode(blob(runDir, t.party, pubs[0].dg)));
  const res = plain(parseJson(fs.readFileSync(path.join(runDir, 'result.json'), 'utf8')));
  const privs = t.entries.filter((e) => e.dir === 'publish' && e.ty === 'privacy');
  const signedPrivacy = privs.length === 1 ? toPlain(cbor.decode(blob(runDir, t.party, privs[0].dg))) : null;
  const est = ESTIMATORS[cluster.protocol];
  const r = est && multisets !== null && multisets.length === est.rounds ? est.fn(multisets, cluster, signedPrivacy) : null;
  if (r !== null && !r.unsupported) {
    // round states: the analyzer broadcast exactly one state per later round, equal to ours
    for (const [k, state] of (r.states ?? []).entries()) {
      const sent = new Set(t.entries.filter((e) => e.dir === 'send' && e.ty === 'state' && e.rd === k + 1).map((e) => e.dg));
      if (sent.size !== 1) { add('V-21', 'recompute round state', false, `round ${k + 1}: the analyzer broadcast ${sent.size} different states (must be exactly one, the same to everyone)`); return; }
      const logged = toPlain(cbor.decode(blob(runDir, t.party, [...sent][0])));
      if (!close(state, logged)) { add('V-21', 'recompute round state', false, `round ${k + 1} state differs from the analyzer's recomputation`); return; }
    }
    const ok = !r.err && close(r.estimate, published);
    if (!add('V-21', 'recompute estimate', ok, r.err ?? (ok ? `${cluster.protocol} estimator re-run on ${r.n} shuffled messages matches the published estimate` : `DIFFERS from the published estimate (${t.party} entry ${pubs[0].i})`))) return;
  } else {
    report.notChecked.push(`V-21 recompute estimate: the ${cluster.protocol} estimator is not implemented in this verifier (spec 06 lists the protocols it does not recompute, with the reason; fakes and a crowd threshold are not specified)${r?.unsupported ? `: ${r.unsupported}` : ''}`);
  }
  const same = close(res.estimate, published);
  const samePriv = signedPrivacy !== null && close(res.privacy, signedPrivacy);
  const bound = resultFieldsFailure(res, cluster, pubs[0].dg);
  add('V-22', 'result.json', same && samePriv && !bound,
    same && samePriv && !bound ? 'estimate, privacy statement and the bound fields (07 R-1) equal the signed data'
      : !same ? 'result.json estimate differs from the published artifact'
        : signedPrivacy !== null && !samePriv ? 'result.json privacy statement differs from the signed one'
          : bound || `${t.party} published ${privs.length} privacy statements (expected 1)`);
  if (!(same && samePriv && !bound)) return;
  // V-23 privacy ledger: L-1 .. L-3 here; L-4 (each release's epsilon) needs the accountant
  const rounds = est?.rounds ?? null;
  const led = checkLedger(signedPrivacy, rounds, r !== null && !r.unsupported && !r.err ? r.received : null);
  if (!led.ok) { add('V-23', 'privacy ledger', false, led.detail); return; }
  // L-4: each release's epsilon as the accountant certifies it, and the gate's cap (spec 07 P-4)
  const l4 = checkReleases(cluster, signedPrivacy);
  if (l4.failure) { add('V-23', 'privacy ledger', false, l4.failure); return; }
  add('V-23', 'privacy ledger', true, led.detail + (l4.unchecked ? '' : '; L-4: every release certified by the accountant (spec 07)'));
  for (const n of [...led.notChecked, ...(l4.unchecked ? [l4.unchecked] : [])]) report.notChecked.push(n);
}

// spec 07 R-1: result.json's protocol, shuffler, session and params are the cluster file's;
// estimate_sha256 is the digest of the signed estimate ('' when all hold)
function resultFieldsFailure(res, cluster, estimateDg) {
  for (const k of ['protocol', 'shuffler', 'session']) if (res[k] !== cluster[k]) return `result.json ${k} ${JSON.stringify(res[k])} is not the cluster file's ${JSON.stringify(cluster[k])}`;
  if (!close(res.params, toPlain(cluster.params))) return 'result.json params differ from the cluster file\'s run.params';
  if (res.estimate_sha256 !== estimateDg) return 'result.json estimate_sha256 is not the digest of the signed estimate';
  return '';
}

function toPlain(v) {
  if (v instanceof Map) { const o = {}; for (const [k, x] of v) o[String(k)] = toPlain(x); return o; }
  if (Array.isArray(v)) return v.map(toPlain);
  if (typeof v === 'bigint') return Number(v);
  return v;
}

// closeness lives in compare.mjs (ledger.mjs imports it there: no import circle)
export { close } from './compare.mjs';
