// V-23 privacy ledger (docs/spec/06-estimates.md L-1 .. L-3): what a verifier re-derives
// without the accountant; L-4 (each release's epsilon) is privacy.mjs's (spec 07).
import { close } from './compare.mjs';

const RELEASE_KEYS = ['bound', 'delta', 'eps', 'group', 'kind', 'mechanism', 'n_accounted', 'n_received', 'note', 'reaccounted', 'round', 'what'];
export const COMPOSITION = 'basic: sum over releases sharing users (every round), max over disjoint groups of users';

// spec L-2: the run's total over its releases
export function compose(rel) {
  const shared = rel.filter((r) => r.group === null);
  const groups = new Map();
  for (const r of rel) if (r.group !== null) { if (!groups.has(r.group)) groups.set(r.group, []); groups.get(r.group).push(r); }
  const sum = (xs, f) => xs.reduce((a, x) => a + x[f], 0);
  let eps = sum(shared, 'eps'), delta = sum(shared, 'delta');
  if (groups.size) {
    eps += Math.max(...[...groups.values()].map((g) => sum(g, 'eps')));
    delta += Math.max(...[...groups.values()].map((g) => sum(g, 'delta')));
  }
  return { eps, delta: Math.min(delta, 1.0), kind: rel.length !== 1 ? 'upper' : rel[0].kind, composition: COMPOSITION, releases: rel.length, reaccounted: rel.some((r) => r.reaccounted) };
}

const isInt = (x) => Number.isInteger(x) && x >= 0;

// `rounds`: the protocol's number of rounds (null: unknown); `received`: per round, the
// well-formed reports the releases of that round count, or {releases: [per release]} (srr-ms),
// or null (not derived for this run)
export function checkLedger(priv, rounds, received) {
  const bad = (detail) => ({ ok: false, detail, notChecked: [] });
  const rel = priv?.releases;
  if (!Array.isArray(rel) || !rel.length) return bad('the signed privacy statement has no releases');
  for (const [i, r] of rel.entries()) {
    const where = `release ${i}`;
    if (!r || typeof r !== 'object' || Array.isArray(r) || Object.keys(r).sort().join() !== RELEASE_KEYS.join()) return bad(`${where}: keys must be exactly ${RELEASE_KEYS.join(', ')}`);
    if (!(typeof r.eps === 'number' && Number.isFinite(r.eps) && r.eps >= 0) || !(typeof r.delta === 'number' && r.delta >= 0 && r.delta < 1)) return bad(`${where}: eps must be finite and >= 0, delta in [0, 1)`);
    if (!['upper', 'exact'].includes(r.kind) || !isInt(r.n_accounted) || !isInt(r.n_received) || !isInt(r.round) || typeof r.reaccounted !== 'boolean' || !(r.group === null || typeof r.group === 'string')) return bad(`${where}: malformed (kind, counts, round, reaccounted or group)`);
    // L-1: the guarantee covers the count received
    if (!(r.n_received >= r.n_accounted || (r.reaccounted && r.n_accounted === r.n_received))) return bad(`${where} (${r.what}): accounted for ${r.n_accounted} reports but only ${r.n_received} were received, and it was not re-accounted`);
    if (rounds !== null && r.round >= rounds) return bad(`${where}: round ${r.round}, but the protocol has ${rounds} round(s)`);
    // L-3: the count is the signed data's
    if (Array.isArray(received) && r.n_received !== received[r.round]) return bad(`${where}: n_received ${r.n_received}, but round ${r.round}'s shuffled multiset has ${received[r.round]} well-formed reports`);
    if (received?.releases && r.n_received !== received.releases[i]) return bad(`${where}: n_received ${r.n_received}, but its batch has ${received.releases[i]} well-formed reports`);
  }
  if (received?.releases && received.releases.length !== rel.length) return bad(`${rel.length} release(s), but ${received.releases.length} attribute(s) were collected`);
  if (rounds !== null) for (let k = 0; k < rounds; k++) if (!rel.some((r) => r.round === k)) return bad(`no release for round ${k}`);
  // L-2: the total is the composition of the releases
  if (!close(compose(rel), priv.total)) return bad('the signed total (privacy.total) is not the composition of its releases');
  const nc = [];
  if (received === null) nc.push('V-23 L-3: the releases\' n_received are not re-derived for this run (its estimator is not run by this verifier)');
  if (priv.fakes !== undefined) nc.push('V-23: privacy.fakes (the fakes statement) is not checked by this verifier');
  return { ok: true, detail: `${rel.length} release(s): each holds at its received count${received !== null ? ' (re-derived from the signed multisets)' : ''}; total = their composition (eps ${priv.total.eps})`, notChecked: nc };
}
