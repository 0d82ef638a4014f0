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
  return { estimate: { frequencies: counts.map((c) => (c / n - q) / (p - q)), reports: n }, n, received: [n] };
}

// gfim (spec K-4): Hadamard-response frequencies in each round, the candidate set, and the
// combination. Public parameters from the cluster file (d: the dataset's public domain size).
const DATASET_D = { 'laplace-50k': 1000 };
const hadamardOrder = (d) => Math.max(2, 2 ** Math.ceil(Math.log2(d)));
function fwht(z) {
  const a = Float64Array.from(z);
  for (let h = 1; h < a.length; h *= 2) {
    for (let b = 0; b < a.length; b += 2 * h) {
      for (let i = b; i < b + h; i++) { const x = a[i], y = a[i + h]; a[i] = x + y; a[i + h] = x - y; }
    }
  }
  return a;
}
function hrEstimate(rows, m, eps, d, scale) {
  const z = new Float64Array(m);
  for (const [j, bit] of rows) {
    if (!(j >= 0 && j < m) || (bit !== 0 && bit !== 1)) throw new Error(`Hadamard report (${j}, ${bit}) out of range`);
    z[j] += 2 * bit - 1;
  }
  const c = (Math.exp(eps) + 1) / (Math.exp(eps) - 1);
  const k = scale * c;
  return Array.from(fwht(z).subarray(0, d), (v) => (k * v) / rows.length);
}
function topIndices(f, k) {
  return f.map((v, i) => i).sort((i, j) => (f[j] - f[i]) || (i - j)).slice(0, k);
}
function gfimParams(cluster) {
  const p = cluster.params;
  const dataset = String(p.dataset ?? 'laplace-50k');
  if (!(dataset in DATASET_D) || p.ell === undefined && dataset !== 'laplace-50k') return null;
  if (p.shuffle !== undefined && p.shuffle !== false || p.local_epsilon !== undefined || (p.method ?? 'gfim') !== 'gfim') return null;
  const k = Number(p.k ?? 10);
  return { d: DATASET_D[dataset], k, kMax: Number(p.k_max ?? 2 * k), ell: Number(p.ell ?? 50),
    eps: Number(p.epsilon ?? 1.0), combination: String(p.combination ?? 'thesis') };
}
function gfimRound0(rows, g) {
  if (!rows.length) throw new Error('round 0 received no reports');
  const f1 = hrEstimate(rows, hadamardOrder(g.d), g.eps, g.d, g.ell);
  return { candidates: topIndices(f1, g.kMax), f1, n1: rows.length };
}
function gfim(rounds, cluster) {
  const g = gfimParams(cluster);
  if (g === null) return { unsupported: 'gfim with these parameters (only the default LDP GFIM on laplace-50k)' };
  try {
    const r0 = gfimRound0(rounds[0].get('phase1') ?? [], g);
    const rep = rounds[1].get('phase2') ?? [];
    if (!rep.length) throw new Error('round 1 received no reports');
    const cand = r0.candidates, f1 = r0.f1, n1 = r0.n1, n2 = rep.length;
    const f2 = hrEstimate(rep, hadamardOrder(g.kMax), g.eps, g.kMax, g.kMax);
    const c = (x) => (Math.exp(x) + 1) / (Math.exp(x) - 1);
    const clip = (x) => Math.min(1, Math.max(0, x));
    const w = cand.map((v, i) => {
      if (g.combination === 'thesis') return (g.ell - 1) / g.ell;
      if (g.combination === 'phase2') return 1;
      if (g.combination === 'ivw') {
        const v1 = (g.ell ** 2 * c(g.eps) ** 2 - clip(f1[v])) / n1, v2 = (g.kMax ** 2 * c(g.eps) ** 2 - clip(f2[i])) / n2;
        return v1 / (v1 + v2);
      }
      throw new Error(`unknown combination ${g.combination}`);
    });
    const f = f1.slice();
    cand.forEach((v, i) => { f[v] = (1 - w[i]) * f[v] + w[i] * f2[i]; });
    const top = topIndices(f, g.k);
    return {
      states: [r0],
      estimate: { top_k: top, top_k_frequencies: top.map((i) => f[i]), frequencies: f, candidates: cand, f1, f2, weight_phase2: w, combination: g.combination, n1, n2 },
      n: n1 + n2,
      received: [n1, n2],
    };
  } catch (e) { return { err: e.message }; }
}

export const ESTIMATORS = { grr: { rounds: 1, fn: grr }, gfim: { rounds: 2, fn: gfim } };
