// V-9 (every field of the signed privacy statement from the public parameters) and V-23 L-4
// (each release's epsilon as the accountant certifies it): docs/spec/07-privacy.md P-1 .. P-4.
// eps_local is never taken from the analyzer's statement: it is checked against the calibration.
import { balleEpsilon, balleMaxLocal, calibrationFailure, corners, forwardFailure } from './accountant.mjs';
import { close } from './compare.mjs';

export const SIMULATION_WARNING = "SIMULATION WITHOUT PRIVACY: the client randomness was seeded from the public cluster file (--seed), so anyone holding the run directory can recompute every user's local noise";
// V-23's fields, and the informational ones (spec 07 P-1)
const LEDGER = ['releases', 'total', 'fakes'];
const INFORMATIONAL = ['shuffler_security', 'note', 'target_note', 'eps_central_lower', 'spec_version'];
export const SPEC_MAJORS = [1];  // the major versions of docs/spec this verifier implements
// the bounds whose value this verifier evaluates (spec 07 A-2; `vr` is the decomposition bound
// for every mechanism it names here: binary corners make them equal, a neutral state falls back)
const DECOMPOSITION_BOUNDS = ['vr', 'decomposition'];
const PURE_LDP = 'pure LDP (no amplification at this count)';

// spec 07 P-2: delta default min(1e-6, 0.01/n)
const runDelta = (p, n) => (p.delta === undefined || p.delta === null ? Math.min(1e-6, 0.01 / n) : Number(p.delta));

function grrModel(p) {
  const n = Number(p.users ?? 10000), k = Number(p.domain ?? 10);
  const target = p.epsilon === undefined ? 1.0 : (p.epsilon === null ? null : Number(p.epsilon));
  return {
    n, k, target, delta: runDelta(p, n), minUsers: p.min_users === undefined ? n : Number(p.min_users),
    bound: String(p.bound ?? 'vr'), local: p.local_epsilon === undefined ? null : Number(p.local_epsilon),
    mech: { mechanism: 'grr', k },
  };
}

// P-3 grr: the statement's fields; returns {failure, unchecked}
function grrStatement(cluster, s) {
  const m = grrModel(cluster.params);
  const fail = (f) => ({ failure: f, unchecked: [] });
  if (!DECOMPOSITION_BOUNDS.includes(m.bound) && m.bound !== 'balle') return { failure: null, unchecked: [`V-9: bound ${m.bound} is not evaluated by this verifier (spec 07 implements vr, decomposition, balle)`] };
  if (typeof s.eps_local !== 'number') return fail('privacy.eps_local is not a number');
  const balle = m.bound === 'balle';
  if (m.local !== null) { if (!close(s.eps_local, m.local)) return fail(`privacy.eps_local ${s.eps_local} is not params.local_epsilon ${m.local}`); }
  else if (balle) { const e = balleMaxLocal(m.target, m.minUsers, m.delta, m.k); if (e === null || !close(s.eps_local, e)) return fail(`privacy.eps_local ${s.eps_local} is not the A-6 calibration ${e}`); }
  else if (m.target !== null) {
    const f = calibrationFailure(s.eps_local, m.target, m.delta, m.minUsers, m.mech);
    if (f) return fail(`privacy.eps_local (A-5 calibration): ${f}`);
  }
  const exact = { eps_central_target: m.target, delta: m.delta, n_accounted: m.minUsers, mechanism: `grr(k=${m.k})` };
  for (const [key, want] of Object.entries(exact)) if (!close(s[key], want)) return fail(`privacy.${key} = ${JSON.stringify(s[key])}, the public parameters give ${JSON.stringify(want)}`);
  if (s.bound === PURE_LDP) { if (!close(s.eps_central, s.eps_local)) return fail('privacy.eps_central of a pure-LDP statement is not eps_local'); }
  else {
    if (s.bound !== m.bound) return fail(`privacy.bound = ${JSON.stringify(s.bound)}, the public parameters give ${JSON.stringify(m.bound)}`);
    if (balle) { const c = balleEpsilon(s.eps_local, m.minUsers, m.delta, m.k); if (c === null || !close(s.eps_central, c)) return fail(`privacy.eps_central ${s.eps_central} is not the A-6 closed form ${c}`); }
    else { const f = forwardFailure(s.eps_central, m.delta, m.minUsers, corners('grr', s.eps_local, m.k)); if (f) return fail(`privacy.eps_central (A-4): ${f}`); }
  }
  const missed = m.target !== null && s.eps_central > m.target * (1 + 1e-12);
  if (s.target_missed !== missed) return fail(`privacy.target_missed = ${s.target_missed}, the statement's eps_central gives ${missed}`);
  return { failure: null, unchecked: [], fields: ['eps_central', 'eps_central_target', 'target_missed', 'delta', 'eps_local', 'n_accounted', 'bound', 'mechanism'] };
}

// P-3 gfim, LDP variant (shuffle = false): pure LDP with eps = params.epsilon in each half
function gfimLdpStatement(cluster, s) {
  const eps = Number(cluster.params.epsilon ?? 1.0);
  const want = { model: 'ldp', eps_local: eps, eps_total: eps, composition: 'parallel (disjoint groups)' };
  for (const [key, v] of Object.entries(want)) if (!close(s[key], v)) return { failure: `privacy.${key} = ${JSON.stringify(s[key])}, the public parameters give ${JSON.stringify(v)}`, unchecked: [] };
  return { failure: null, unchecked: [], fields: Object.keys(want) };
}

const shuffleOff = (v) => v !== undefined && ['0', 'false', 'no', 'off'].includes(String(v).toLowerCase());
function model(cluster) {
  if (cluster.protocol === 'grr') return grrStatement;
  if (cluster.protocol === 'gfim' && shuffleOff(cluster.params.shuffle) && (cluster.params.method ?? 'gfim') === 'gfim' && cluster.params.local_epsilon === undefined) return gfimLdpStatement;
  return null;
}

// V-9: {ok, detail, unchecked}
export function checkStatement(cluster, s) {
  if (!s || typeof s !== 'object' || Array.isArray(s)) return { ok: false, detail: 'the signed privacy statement is not a map', unchecked: [] };
  // P-1: the spec version the run follows (absent: 1.0, a run made before versions were recorded)
  const v = s.spec_version ?? '1.0';
  if (typeof v !== 'string' || !/^[0-9]+\.[0-9]+$/.test(v)) return { ok: false, detail: `privacy.spec_version ${JSON.stringify(v)} is not a version 'MAJOR.MINOR'`, unchecked: [] };
  if (!SPEC_MAJORS.includes(Number(v.split('.')[0]))) return { ok: false, detail: `spec version ${v}: unknown major version (this verifier implements ${SPEC_MAJORS.join(', ')})`, unchecked: [] };
  const seeded = cluster.params.seed !== undefined;
  if (s.simulation !== seeded) return { ok: false, detail: `privacy.simulation = ${s.simulation}, the cluster file ${seeded ? 'has' : 'has no'} seed`, unchecked: [] };
  if (seeded ? s.warning !== SIMULATION_WARNING : s.warning !== undefined) return { ok: false, detail: 'privacy.warning is not the simulation warning a seeded run states (and only it)', unchecked: [] };
  const fn = model(cluster);
  if (fn === null) return { ok: true, detail: 'simulation marking only', unchecked: [`V-9: the privacy statement of protocol ${cluster.protocol} (these parameters) is not modelled by this verifier (spec 07 P-3 lists grr and the LDP gfim)`] };
  const r = fn(cluster, s);
  if (r.failure) return { ok: false, detail: r.failure, unchecked: [] };
  if (r.unchecked.length) return { ok: true, detail: 'simulation marking only', unchecked: r.unchecked };
  const known = new Set([...r.fields, ...LEDGER, ...INFORMATIONAL, 'simulation', 'warning']);
  const extra = Object.keys(s).filter((k) => !known.has(k));
  if (extra.length) return { ok: false, detail: `the signed privacy statement has field(s) ${extra.join(', ')} the protocol does not state`, unchecked: [] };
  const missing = r.fields.filter((k) => !(k in s));
  if (missing.length) return { ok: false, detail: `the signed privacy statement lacks ${missing.join(', ')}`, unchecked: [] };
  return { ok: true, detail: `${r.fields.join(', ')} re-derived from the public parameters (eps_local by the calibration, never from the statement)`, unchecked: [] };
}

// V-23 L-4 for one release: null (certified), or {failure} / {unchecked}
export function releaseFailure(cluster, s, r) {
  if (cluster.protocol === 'gfim' && model(cluster) !== null) {
    const eps = Number(cluster.params.epsilon ?? 1.0);
    return close(r.eps, eps) && r.delta === 0 && r.bound === 'pure LDP (every report is eps-LDP, spec Sec. 2.4)' && r.n_accounted === 0 && r.group === (r.round === 0 ? 'G1' : 'G2') ? null
      : { failure: `release of round ${r.round}: not the pure-LDP release (eps ${eps}, delta 0, group G${r.round + 1}) of the LDP GFIM` };
  }
  if (cluster.protocol !== 'grr' || model(cluster) === null) return { unchecked: `V-23 L-4: the releases of protocol ${cluster.protocol} are not certified by this verifier (spec 07 P-3)` };
  const m = grrModel(cluster.params);
  if (!DECOMPOSITION_BOUNDS.includes(m.bound) && m.bound !== 'balle') return { unchecked: `V-23 L-4: bound ${m.bound} is not evaluated by this verifier` };
  if (r.round !== 0 || r.group !== null) return { failure: 'a grr release is of round 0 and all users (group null)' };
  if (!r.reaccounted) {
    return close(r.eps, s.eps_central) && close(r.delta, m.delta) && r.n_accounted === m.minUsers && r.bound === s.bound ? null
      : { failure: `the release is not the statement's (eps_central ${s.eps_central}, delta ${m.delta}, n_accounted ${m.minUsers}, bound ${s.bound})` };
  }
  if (r.n_accounted !== r.n_received) return { failure: 'a re-accounted release is accounted at the count received' };
  if (r.bound === 'pure LDP (no amplification at the count received)') return close(r.eps, s.eps_local) && r.delta === 0 ? null : { failure: 'a pure-LDP release states eps_local and delta 0' };
  if (r.bound !== 'vr (grr), re-accounted at the count received' || !close(r.delta, m.delta)) return { failure: `re-accounted release: bound ${r.bound}, delta ${r.delta}` };
  const f = forwardFailure(r.eps, m.delta, r.n_received, corners('grr', s.eps_local, m.k));
  return f ? { failure: `re-accounted at ${r.n_received} (A-4): ${f}` } : null;
}
