// V-21: the protocols' estimators (docs/spec/06-estimates.md), recomputed from the verified
// plaintext multisets. Version 1 implements grr; the others are reported as not checked.

// grr (spec K-1): counts of the reports, then (c/n - q) / (p - q)
function grr(rounds, cluster, privacy) {
  const k = Number(cluster.params.domain ?? 10);
  const eps = Number(privacy?.eps_local);
  if (!Number.isFinite(eps)) return { err: 'the signed privacy statement has no eps_local' };
  const rows = rounds[0].get('reports') ?? [];
  const counts = new Array(k).fill(0);
  for (const r of rows) {
    if (!(r[0] >= 0 && r[0] < k)) return { err: `report ${r[0]} outside [0, ${k})` };
    counts[r[0]] += 1;
  }
  const e = Math.exp(eps);
  const p = e / (e + k - 1), q = 1 / (e + k - 1);
  const n = rows.length;
  return { estimate: { frequencies: counts.map((c) => (c / n - q) / (p - q)), reports: n }, n };
}

export const ESTIMATORS = { grr: { rounds: 1, fn: grr } };
