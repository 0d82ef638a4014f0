// V-9 (every field of the signed privacy statement from the public parameters) and V-23 L-4
// (each release's epsilon as the accountant certifies it): docs/spec/07-privacy.md P-1 .. P-4.
// eps_local is never taken from the analyzer's statement: it is checked against the calibration.
import { balleEpsilon, balleMaxLocal, calibrationFailure, corners, curve, forwardFailure } from './accountant.mjs';
import { close } from './compare.mjs';
import { categorical } from './estimates.mjs';

export const SIMULATION_WARNING = "SIMULATION WITHOUT PRIVACY: the client randomness was seeded from the public cluster file (--seed), so anyone holding the run directory can recompute every user's local noise";
export const SPEC_MAJORS = [1];  // the major versions of docs/spec this verifier implements
// V-23's fields, and the informational ones (spec 07 P-1)
const LEDGER = ['releases', 'total', 'fakes'];
const INFORMATIONAL = ['shuffler_security', 'note', 'target_note', 'eps_central_lower', 'spec_version', 'reason'];
// the bounds whose value this verifier evaluates: by A-3 (`vr` is the decomposition bound for
// every mechanism named here: equal without a neutral corner, its fallback with one) or A-8
// (`fmt21`, for any mechanism)
// (`exact` for k-RR with every k >= 3 is A-3 too: the exact search exists for k = 2 only, P-3)
const CURVE_BOUNDS = ['vr', 'decomposition', 'fmt21'];
const evaluated = (bound, ks) => CURVE_BOUNDS.includes(bound) || (bound === 'exact' && ks.every((k) => k >= 3));
const PURE_LDP = 'pure LDP (no amplification at this count)';
const PURE_RECEIVED = 'pure LDP (no amplification at the count received)';
const GFIM_PURE = 'pure LDP (every report is eps-LDP, spec Sec. 2.4)';

// spec 07 P-2
const runDelta = (p, n) => (p.delta === undefined || p.delta === null ? Math.min(1e-6, 0.01 / n) : Number(p.delta));
const minUsers = (p, n) => (p.min_users === undefined ? n : Number(p.min_users));
const target = (p) => (p.epsilon === undefined ? 1.0 : Number(p.epsilon));
const shuffleOff = (v) => v !== undefined && ['0', 'false', 'no', 'off'].includes(String(v).toLowerCase());
const differs = (key, got, want) => `privacy.${key} = ${JSON.stringify(got)}, the public parameters give ${JSON.stringify(want)}`;

function exactFields(s, want) {
  for (const [key, v] of Object.entries(want)) if (!close(s[key], v) || typeof s[key] !== typeof v) return differs(key, s[key], v);
  return null;
}

// the eps_local / eps_central pair of a shuffled k-RR or Hadamard statement (P-3 items 2, 3)
function amplified(s, local, epsTarget, delta, n, mech, bound, epsKey = 'eps_central') {
  if (typeof s.eps_local !== 'number') return 'privacy.eps_local is not a number';
  if (local !== null) { if (!close(s.eps_local, local)) return `privacy.eps_local ${s.eps_local} is not params.local_epsilon ${local}`; }
  else if (bound === 'balle') { const e = balleMaxLocal(epsTarget, n, delta, mech.k); if (e === null || !close(s.eps_local, e)) return `privacy.eps_local ${s.eps_local} is not the A-6 calibration ${e}`; }
  else { const f = calibrationFailure(s.eps_local, epsTarget, delta, n, { bound, ...mech }); if (f) return `privacy.eps_local (A-5 calibration): ${f}`; }
  if (epsKey === null) return null;
  if (s.bound === PURE_LDP) return close(s[epsKey], s.eps_local) ? null : `privacy.${epsKey} of a pure-LDP statement is not eps_local`;
  if (s.bound !== bound) return differs('bound', s.bound, bound);
  if (bound === 'balle') { const c = balleEpsilon(s.eps_local, n, delta, mech.k); return c !== null && close(s[epsKey], c) ? null : `privacy.${epsKey} ${s[epsKey]} is not the A-6 closed form ${c}`; }
  const f = forwardFailure(s[epsKey], delta, n, curve(bound, mech.mechanism, s.eps_local, mech.k));
  return f ? `privacy.${epsKey} (A-4): ${f}` : null;
}

// P-4 one shuffled release of a statement calibrated at n (re-accounted below it)
function shuffledRelease(r, planned, delta, n, epsLocal, mech, bound, reBound) {
  if (!r.reaccounted) {
    return close(r.eps, planned) && close(r.delta, delta) && r.n_accounted === n && r.bound === bound ? null
      : `the release is not the statement's (eps ${planned}, delta ${delta}, n_accounted ${n}, bound ${bound})`;
  }
  if (r.n_accounted !== r.n_received) return 'a re-accounted release is accounted at the count received';
  if (r.bound === PURE_RECEIVED) return close(r.eps, epsLocal) && r.delta === 0 ? null : 'a pure-LDP release states eps_local and delta 0';
  if (r.bound !== reBound || !close(r.delta, delta)) return `re-accounted release: bound ${r.bound}, delta ${r.delta}`;
  const f = forwardFailure(r.eps, delta, r.n_received, corners(mech.mechanism, epsLocal, mech.k));
  return f ? `re-accounted at ${r.n_received} (A-4): ${f}` : null;
}

// P-3 grr
function grr(cluster) {
  const p = cluster.params, n = Number(p.users ?? 10000), k = Number(p.domain ?? 10);
  const m = { n, k, t: p.epsilon === null ? null : target(p), delta: runDelta(p, n), mu: minUsers(p, n), bound: String(p.bound ?? 'vr'), local: p.local_epsilon === undefined ? null : Number(p.local_epsilon), mech: { mechanism: 'grr', k } };
  if (!evaluated(m.bound, [k]) && m.bound !== 'balle') return { unchecked: `bound ${m.bound} with k = ${k} (spec 07 implements vr, decomposition, fmt21, balle, and exact for k >= 3)` };
  if (m.local === null && m.t === null) return { unchecked: 'grr without a target epsilon' };
  return {
    rounds: 1,
    fields: ['eps_central', 'eps_central_target', 'target_missed', 'delta', 'eps_local', 'n_accounted', 'bound', 'mechanism'],
    cap: p.max_epsilon !== undefined ? Number(p.max_epsilon) : m.t,
    statement(s) {
      const f = exactFields(s, { eps_central_target: m.t, delta: m.delta, n_accounted: m.mu, mechanism: `grr(k=${m.k})` })
        ?? amplified(s, m.local, m.t, m.delta, m.mu, m.mech, m.bound);
      if (f) return f;
      const missed = m.t !== null && s.eps_central > m.t * (1 + 1e-12);
      return s.target_missed === missed ? null : `privacy.target_missed = ${s.target_missed}, the statement's eps_central gives ${missed}`;
    },
    release(s, r) {
      if (r.round !== 0 || r.group !== null) return 'a grr release is of round 0 and all users (group null)';
      return shuffledRelease(r, s.eps_central, m.delta, m.mu, s.eps_local, m.mech, s.bound, 'vr (grr), re-accounted at the count received');
    },
  };
}

// the multidimensional protocols' accounting parameters (P-3): null when not modelled
// (`ksOf`: the k of the k-RR mechanisms the protocol runs on the dataset)
function multidim(cluster, ksOf = (ds) => ds.domainSizes) {
  const p = cluster.params, ds = categorical(cluster);
  if (ds === null) return { unchecked: `${cluster.protocol} on raw data files (data_dir) or with estimator ${cluster.params.estimator} (06 D-1, D-2)` };
  const b = p.bound === undefined ? null : String(p.bound);
  const accounting = String(p.accounting ?? (b === 'paper' || b === 'balle' ? 'paper' : 'tight'));
  const tb = String(p.tight_bound ?? (b !== null && b !== 'paper' && b !== 'balle' && b !== 'tight' ? b : 'vr'));
  const policy = String(p.policy ?? 'strict');
  const modelled = (accounting === 'paper' || (accounting === 'tight' && evaluated(tb, ksOf(ds)))) && policy === 'strict' && p.local_epsilon === undefined;
  if (!modelled) return { unchecked: `${cluster.protocol} with accounting ${accounting}, bound ${tb}, policy ${policy} (spec 07 P-3: paper, or tight with vr/decomposition/fmt21 or exact with every k_j >= 3; strict)` };
  const n = ds.n, t = target(p);
  const cap = p.max_epsilon !== undefined ? Number(p.max_epsilon) : t;
  return { ds, n, t, delta: runDelta(p, n), mu: minUsers(p, n), accounting, policy, tb, cap, common: { eps_c: t, delta: runDelta(p, n), accounting, policy, min_users: minUsers(p, n), max_epsilon: cap } };
}
const PLANNED = 'vr (grr), re-accounted at the count received';
// P-3 the statement's bound text of tight accounting (fmt21 holds for any eps-LDP randomizer)
const tightText = (tb, mechanism) => (tb === 'fmt21' ? 'accountant:fmt21/generic' : `accountant:${tb}/${mechanism}`);
// a release planned at the target eps_c: A-4's soundness half (the calibration made it tight)
const soundAt = (t, delta, n, epsLocal, k, bound) => forwardFailure(t, delta, n, curve(bound, 'grr', epsLocal, k), 1);
const PAPER = 'balle19-closed-form', ROUTED = 'accountant:vr/grr (closed form outside its theorem)';

// P-3 the budget of one k-RR calibrated for nEff users: the statement's bound text, the
// release's (paper accounting: `paperRelease` inside the theorem), whether it is infeasible,
// and the checks of a stated eps_l (calibration) and of the planned release at eps_c (soundness)
function budget(m, k, nEff, tightMech, paperRelease) {
  const tight = (tb, text) => ({
    bound: text, release: text, infeasible: false,
    calibrated: (e) => amplified({ eps_local: e }, null, m.t, m.delta, nEff, { mechanism: 'grr', k, bound: tb }, text, null),
    sound: (e) => soundAt(m.t, m.delta, nEff, e, k, tb),
  });
  if (m.accounting === 'tight') return tight(m.tb, tightText(m.tb, tightMech));
  // A-9 Calculate (Balle et al.'s closed form solved for eps_l), strict policy
  const L = 14 * Math.log(2 / m.delta), X = m.t ** 2 * (nEff - 1) / L, a = X - k + 1;
  if (m.t > 1 || (a > 0 && Math.log(a) > 0 && (nEff - 1) * m.t < 27 * (a + k - 1))) return tight('vr', ROUTED);
  if (a <= 1) return { bound: PAPER, infeasible: true };
  const want = Math.log(a);
  return {
    bound: PAPER, release: paperRelease, infeasible: false,
    calibrated: (e) => (close(e, want) ? null : `eps_l ${e} is not Calculate's ln(X - k + 1) = ${want} (A-9)`),
    sound: (e) => { const c = Math.sqrt(L * (Math.exp(e) + k - 1) / (nEff - 1)); return close(c, m.t) ? null : `the closed form at eps_l ${e} gives ${c}, not eps_c ${m.t} (A-9)`; },
  };
}

// P-3 psrr-ss (one k_max-RR release among all users) and arr-ss (one K-RR release, K = sum
// k_j): `kOf` the k of the dataset, `key` the statement's field holding it
function singleRr(name, kOf, key, mechText, theorem) {
  return (cluster) => {
    const m = multidim(cluster, (ds) => [kOf(ds)]);
    if (m.unchecked) return m;
    const k = kOf(m.ds), b = budget(m, k, m.mu, mechText, `${PAPER} (${theorem})`);
    if (b.infeasible) return { unchecked: `${name} without a feasible local epsilon (no run publishes one)` };
    return {
      rounds: 1,
      fields: ['protocol', 'eps_c', 'delta', 'eps_l', 'accounting', 'policy', 'bound', 'min_users', 'max_epsilon', key, 'n'],
      cap: m.cap,
      statement: (s) => exactFields(s, { protocol: name, ...m.common, bound: b.bound, [key]: k, n: m.n })
        ?? (typeof s.eps_l === 'number' ? b.calibrated(s.eps_l) : 'privacy.eps_l is not a number'),
      release(s, r) {
        if (r.round !== 0 || r.group !== null) return `the ${name} release is of round 0 and all users (group null)`;
        const f = r.reaccounted ? null : b.sound(s.eps_l);
        return f ? `(A-4) ${f}` : shuffledRelease(r, m.t, m.delta, m.mu, s.eps_l, { mechanism: 'grr', k }, b.release, PLANNED);
      },
    };
  };
}
const psrrSs = singleRr('psrr-ss', (ds) => Math.max(...ds.domainSizes), 'k_max', 'grr(k_max)', 'Theorem 7');
const arrSs = singleRr('arr-ss', (ds) => ds.domainSizes.reduce((a, x) => a + x, 0), 'K', 'grr(K)', 'Theorem 4');

// P-3 srr-ms: attribute j's k_j-RR within its group of floor(min_users/d) users (parallel)
function srrMs(cluster) {
  const m = multidim(cluster);
  if (m.unchecked) return m;
  const ks = m.ds.domainSizes, g = Math.floor(m.mu / ks.length);
  const bs = ks.map((k) => budget(m, k, g, 'grr', `${PAPER} (Theorem 1, parallel over groups)`));
  const texts = bs.map((b) => b.bound), bound = new Set(texts).size === 1 ? texts[0] : texts;
  const infeasible = m.ds.attributes.filter((_, j) => bs[j].infeasible);
  return {
    rounds: 1,
    fields: ['protocol', 'eps_c', 'delta', 'eps_l', 'accounting', 'policy', 'bound', 'min_users', 'max_epsilon', 'composition', 'group_size', 'infeasible'],
    cap: m.cap,
    statement(s) {
      const f = exactFields(s, { protocol: 'srr-ms', ...m.common, composition: 'parallel over d disjoint groups', group_size: g });
      if (f) return f;
      if (!close(s.bound, bound)) return differs('bound', s.bound, bound);
      if (!close(s.infeasible, infeasible)) return differs('infeasible', s.infeasible, infeasible);
      if (!Array.isArray(s.eps_l) || s.eps_l.length !== ks.length) return `privacy.eps_l must list ${ks.length} local epsilons`;
      for (const [j, b] of bs.entries()) {
        if (b.infeasible) { if (s.eps_l[j] !== null) return `attribute ${j}: infeasible, its eps_l must be null`; continue; }
        const e = typeof s.eps_l[j] === 'number' ? b.calibrated(s.eps_l[j]) : 'eps_l is not a number';
        if (e) return `attribute ${j}: ${e}`;
      }
      return null;
    },
    release(s, r) {
      const j = typeof r.group === 'string' && /^a[0-9]+$/.test(r.group) ? Number(r.group.slice(1)) : -1;
      if (r.round !== 0 || !(j >= 0 && j < ks.length) || bs[j].infeasible) return 'an srr-ms release is of round 0 and group a{j} of a feasible attribute j';
      const f = r.reaccounted ? null : bs[j].sound(s.eps_l[j]);
      return f ? `(A-4) ${f}` : shuffledRelease(r, m.t, m.delta, g, s.eps_l[j], { mechanism: 'grr', k: ks[j] }, bs[j].release, PLANNED);
    },
  };
}

// P-3 sue-ms: SRR-MS's groups, each attribute's SUE vector at one eps_l (tight accounting)
function sueMs(cluster) {
  const m = multidim(cluster, () => [3]);
  if (m.unchecked) return m;
  // paper accounting: the decomposition bound for whole SUE vectors (Balle's form does not apply)
  const paper = m.accounting === 'paper', tb = paper ? 'decomposition' : m.tb;
  const ks = m.ds.domainSizes, g = Math.floor(m.mu / ks.length), bound = paper ? 'accountant:decomposition/sue (whole vectors)' : tightText(tb, 'sue');
  const mech = { mechanism: 'sue', k: null, bound: tb };
  return {
    rounds: 1,
    fields: ['protocol', 'eps_c', 'delta', 'eps_l', 'accounting', 'policy', 'bound', 'min_users', 'max_epsilon', 'composition', 'group_size'],
    cap: m.cap,
    statement: (s) => exactFields(s, { protocol: 'sue-ms', ...m.common, bound, composition: 'parallel over d disjoint groups', group_size: g })
      ?? amplified({ eps_local: s.eps_l }, null, m.t, m.delta, g, mech, bound, null),
    release(s, r) {
      const j = typeof r.group === 'string' && /^a[0-9]+$/.test(r.group) ? Number(r.group.slice(1)) : -1;
      if (r.round !== 0 || !(j >= 0 && j < ks.length)) return 'a sue-ms release is of round 0 and group a{j}';
      const f = r.reaccounted ? null : forwardFailure(m.t, m.delta, g, curve(tb, 'sue', s.eps_l), 1);
      return f ? `(A-4) ${f}` : shuffledRelease(r, m.t, m.delta, g, s.eps_l, mech, bound, 'vr (sue), re-accounted at the count received');
    },
  };
}

// P-3 oue-ldp: every user reports one sampled attribute by OUE at eps_c, pure LDP
function oueLdp(cluster) {
  const m = multidim(cluster);
  if (m.unchecked) return m;
  return {
    rounds: 1,
    fields: ['protocol', 'eps_c', 'delta', 'eps_l', 'accounting', 'policy', 'bound', 'min_users', 'max_epsilon', 'delta_local'],
    cap: m.cap,
    statement: (s) => exactFields(s, { protocol: 'oue-ldp', ...m.common, eps_l: m.t, bound: 'pure LDP (no amplification claimed)', delta_local: 0.0 }),
    release: (s, r) => (r.round === 0 && r.group === null && close(r.eps, m.t) && r.delta === 0 && r.n_accounted === 0 && !r.reaccounted && r.bound === 'pure LDP (Wang et al. 2017, OUE is eps-LDP)'
      ? null : `the oue-ldp release is eps_c ${m.t}, delta 0, pure LDP, of round 0 and all users`),
  };
}

// P-3 gfim: the LDP variant (pure LDP per half) and the shuffle variant (Hadamard per round)
function gfim(cluster) {
  const p = cluster.params;
  if ((p.method ?? 'gfim') !== 'gfim') return { unchecked: `gfim with method ${p.method}` };
  const t = target(p), local = p.local_epsilon === undefined ? null : Number(p.local_epsilon);
  const ldp = local ?? t;  // the LDP variant's budget: params.local_epsilon, else params.epsilon
  const pure = (r) => (close(r.eps, ldp) && r.delta === 0 && r.bound === GFIM_PURE && r.n_accounted === 0 ? null : `release of round ${r.round}: not the pure-LDP release (eps ${ldp}, delta 0) of the LDP GFIM`);
  const group = (r) => (r.group === (r.round === 0 ? 'G1' : 'G2') ? null : `release of round ${r.round}: group must be G${r.round + 1} (disjoint halves)`);
  if (shuffleOff(p.shuffle)) {
    return {
      rounds: 2, fields: ['model', 'eps_local', 'eps_total', 'composition'], cap: null,
      statement: (s) => exactFields(s, { model: 'ldp', eps_local: ldp, eps_total: ldp, composition: 'parallel (disjoint groups)' }),
      release: (s, r) => group(r) ?? pure(r),
    };
  }
  const bound = String(p.bound ?? 'vr');
  if (!CURVE_BOUNDS.includes(bound) || p.users === undefined) return { unchecked: `gfim shuffle variant with bound ${bound}${p.users === undefined ? ' and the dataset\'s own user count' : ''}` };
  const n = Number(p.users), delta = runDelta(p, n), half = Math.floor(minUsers(p, n) / 2), mech = { mechanism: 'hadamard', k: null };
  return {
    rounds: 2,
    fields: ['model', 'eps_central_target', 'eps_central', 'target_missed', 'delta', 'eps_local', 'composition', 'round'],
    cap: p.max_epsilon !== undefined ? Number(p.max_epsilon) : t,
    statement(s) {
      const rd = s.round;
      if (!rd || typeof rd !== 'object' || Array.isArray(rd)) return 'privacy.round is not a map';
      const keys = ['bound', 'delta', 'eps_central', 'eps_central_lower', 'eps_local', 'mechanism', 'n_shuffled', 'note'];
      if (Object.keys(rd).sort().join() !== keys.join()) return `privacy.round must have exactly ${keys.join(', ')}`;
      const f = exactFields(s, { model: 'shuffle', eps_central_target: t, delta, composition: 'parallel (disjoint groups), per round as below' })
        ?? exactFields(rd, { delta, n_shuffled: half, mechanism: 'hadamard' })
        ?? (close(rd.eps_local, s.eps_local) && close(rd.eps_central, s.eps_central) ? null : 'privacy.round repeats eps_local and eps_central')
        ?? amplified({ ...s, bound: rd.bound }, local, t, delta, half, mech, bound);
      if (f) return f;
      const missed = s.eps_central > t * (1 + 1e-12);
      return s.target_missed === missed ? null : `privacy.target_missed = ${s.target_missed}, eps_central gives ${missed}`;
    },
    release: (s, r) => group(r) ?? shuffledRelease(r, s.eps_central, delta, half, s.eps_local, mech, `${s.round.bound} (hadamard)`, 'vr (hadamard), re-accounted at the count received'),
  };
}

const MODELS = { grr, 'psrr-ss': psrrSs, 'arr-ss': arrSs, 'srr-ms': srrMs, 'sue-ms': sueMs, 'oue-ldp': oueLdp, gfim };
function model(cluster) {
  const fn = MODELS[cluster.protocol];
  if (fn === undefined) return { unchecked: `protocol ${cluster.protocol}` };
  return fn(cluster);
}

// V-9: {ok, detail, unchecked}
export function checkStatement(cluster, s) {
  const bad = (detail) => ({ ok: false, detail, unchecked: [] });
  if (!s || typeof s !== 'object' || Array.isArray(s)) return bad('the signed privacy statement is not a map');
  // P-1: the spec version the run follows (absent: 1.0, a run made before versions were recorded)
  const v = s.spec_version ?? '1.0';
  if (typeof v !== 'string' || !/^[0-9]+\.[0-9]+$/.test(v)) return bad(`privacy.spec_version ${JSON.stringify(v)} is not a version 'MAJOR.MINOR'`);
  if (!SPEC_MAJORS.includes(Number(v.split('.')[0]))) return bad(`spec version ${v}: unknown major version (this verifier implements ${SPEC_MAJORS.join(', ')})`);
  const seeded = cluster.params.seed !== undefined;
  if (s.simulation !== seeded) return bad(`privacy.simulation = ${s.simulation}, the cluster file ${seeded ? 'has' : 'has no'} seed`);
  if (seeded ? s.warning !== SIMULATION_WARNING : s.warning !== undefined) return bad('privacy.warning is not the simulation warning a seeded run states (and only it)');
  const m = model(cluster);
  if (m.unchecked) return { ok: true, detail: 'spec version and simulation marking only', unchecked: [`V-9: the privacy statement of ${m.unchecked} is not modelled by this verifier (spec 07 P-5)`] };
  const known = new Set([...m.fields, ...LEDGER, ...INFORMATIONAL, 'simulation', 'warning']);
  const extra = Object.keys(s).filter((k) => !known.has(k));
  if (extra.length) return bad(`the signed privacy statement has field(s) ${extra.join(', ')} the protocol does not state`);
  const missing = m.fields.filter((k) => !(k in s));
  if (missing.length) return bad(`the signed privacy statement lacks ${missing.join(', ')}`);
  const f = m.statement(s);
  if (f) return bad(f);
  return { ok: true, detail: `${m.fields.join(', ')} re-derived from the public parameters (the local epsilon by the calibration, never from the statement)`, unchecked: [] };
}

// V-23 L-4 of every release and the gate (P-4, A-7): {failure} or {unchecked} or {}
export function checkReleases(cluster, s) {
  const m = model(cluster);
  if (m.unchecked) return { unchecked: `V-23 L-4: the releases of ${m.unchecked} are not certified by this verifier (spec 07 P-5)` };
  for (const [i, r] of s.releases.entries()) {
    const f = m.release(s, r);
    if (f) return { failure: `L-4 release ${i}: ${f}` };
  }
  if (m.cap !== null && !(s.total.eps <= m.cap * (1 + 1e-9))) return { failure: `L-4 the gate: total eps ${s.total.eps} is above max_epsilon ${m.cap}, the gate refuses` };
  return {};
}
