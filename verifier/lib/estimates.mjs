// V-21: the protocols' estimators (docs/spec/06-estimates.md), recomputed from the verified
// plaintext multisets: grr, psrr-ss, srr-ms, arr-ss, sue-ms, oue-ldp, hist_kr, cnt_rr (the
// linear debiasing estimators LD-1) and gfim; the others are listed with the reason in the spec and reported
// as not checked.
import { publicSchema } from './schema.mjs';

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
const flag = (v) => {
  if (typeof v === 'boolean') return v;
  const t = String(v).toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(t)) return true;
  if (['0', 'false', 'no', 'off'].includes(t)) return false;
  return null;
};
// K-4 public parameters; `privacy` (the signed statement) gives the shuffle variant's local
// epsilon and its accounted report count (K-5)
// (d and the default ell: D-2 from the run's own set-valued schema, else the bundled dataset's)
function gfimParams(cluster, privacy = null) {
  const p = cluster.params;
  const own = publicSchema(p);
  if (own !== null && own.kind !== 'setvalued') throw new Error(`gfim needs a set-valued schema, the run published a ${own.kind} one (spec 06 D-2)`);
  const dataset = String(p.dataset ?? 'laplace-50k');
  if (own === null && (!(dataset in DATASET_D) || p.ell === undefined && dataset !== 'laplace-50k')) return null;
  if ((p.method ?? 'gfim') !== 'gfim' || p.data !== undefined || (own === null && p.data_dir !== undefined)) return null;
  const ell = p.ell ?? (own === null ? 50 : own.maxItems);
  if (ell === null) throw new Error('gfim on own data without ell: neither params.ell nor the schema\'s max_items (spec 06 D-2)');
  const shuffle = flag(p.shuffle ?? true);
  if (shuffle === null) return null;
  const k = Number(p.k ?? 10);
  const g = { d: own === null ? DATASET_D[dataset] : own.d, k, kMax: Number(p.k_max ?? 2 * k), ell: Number(ell),
    eps: Number(p.local_epsilon ?? p.epsilon ?? 1.0), combination: String(p.combination ?? 'thesis'), accounted: null };
  if (shuffle) {
    g.eps = privacy?.eps_local;
    g.accounted = privacy?.round?.n_shuffled;
    if (privacy !== null && (typeof g.eps !== 'number' || !Number.isInteger(g.accounted))) return null;
  }
  return g;
}
function gfimRound0(rows, g) {
  if (!rows.length) throw new Error('round 0 received no reports');
  const f1 = hrEstimate(rows, hadamardOrder(g.d), g.eps, g.d, g.ell);
  return { candidates: topIndices(f1, g.kMax), f1, n1: rows.length };
}
function gfim(rounds, cluster, privacy) {
  const g = gfimParams(cluster, privacy ?? {});
  if (g === null) return { unsupported: 'gfim with these parameters (only GFIM on laplace-50k, LDP or shuffle variant)' };
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
      estimate: { top_k: top, top_k_frequencies: top.map((i) => f[i]), frequencies: f, candidates: cand, f1, f2, weight_phase2: w, combination: g.combination, n1, n2,
        ...(g.accounted !== null ? { reports_accounted: g.accounted, amplification_holds: Math.min(n1, n2) >= g.accounted } : {}) },
      n: n1 + n2,
      received: [n1, n2],
    };
  } catch (e) { return { err: e.message }; }
}

// psrr-ss and srr-ms (spec K-2, K-3): the bundled categorical datasets' public schemas (D-1)
const CATEGORICAL = {
  adult: {
    n: 45222,
    attributes: ['age', 'workclass', 'fnlwgt', 'education', 'education-num', 'marital-status', 'occupation', 'relationship', 'race', 'sex', 'capital-gain', 'capital-loss', 'hours-per-week', 'native-country', 'income'],
    domainSizes: [16, 7, 20, 16, 16, 7, 14, 6, 5, 2, 20, 20, 20, 41, 2],
  },
  'census-income': {
    n: 200000,
    attributes: ['age', 'class-of-worker', 'marital-status', 'race', 'sex', 'full-or-part-time-employment', 'tax-filer-status', 'household-summary', 'num-persons-worked-for-employer', 'family-members-under-18', 'citizenship', 'migration-code-change-in-reg', 'reason-for-unemployment'],
    domainSizes: [9, 9, 7, 5, 2, 8, 6, 8, 7, 5, 5, 9, 6],
  },
};
// D-1 a bundled dataset's schema, or D-2 the run's own published schema; null when neither
export function categorical(cluster) {
  const p = cluster.params;
  const estimator = String(p.estimator ?? 'paper');
  if (!['paper', 'observed'].includes(estimator)) return null;
  const own = publicSchema(p);
  if (own !== null) {
    if (own.kind !== 'categorical') throw new Error(`${cluster.protocol} needs a categorical schema, the run published a ${own.kind} one (spec 06 D-2)`);
    return { n: own.n, attributes: own.attributes, domainSizes: own.domainSizes, estimator };
  }
  if (p.data_dir !== undefined) return null;
  const ds = CATEGORICAL[String(p.dataset ?? 'adult')];
  if (ds === undefined) return null;
  return { ...ds, n: p.users !== undefined ? Number(p.users) : ds.n, estimator };
}
// LD-1: the (p, q) of each mechanism (spec 06) and the debiased counts (c / N - q) / (p - q)
const MECHANISMS = {
  grr: (k, eps) => { const e = Math.exp(eps); return [e / (e + k - 1), 1 / (e + k - 1)]; },
  sue: (k, eps) => { const s = Math.exp(eps / 2); return [s / (s + 1), 1 / (s + 1)]; },
  oue: (k, eps) => [0.5, 1 / (Math.exp(eps) + 1)],
};
function debias(mech, c, k, eps, N) {
  const [p, q] = MECHANISMS[mech](k, eps);
  return c.map((x) => (x / N - q) / (p - q));
}
// GRR(k, eps) estimate of counts c over N reports (N: a number, or NaN)
const grrFreqs = (c, k, eps, N) => debias('grr', c, k, eps, N);
function multidimPackage(name, ds, est, reports, discarded) {
  return { protocol: name, attributes: ds.attributes, domain_sizes: ds.domainSizes, estimator: ds.estimator, marginals: est[ds.estimator], estimates: est, reports, discarded };
}
function psrrSs(rounds, cluster, privacy) {
  const ds = categorical(cluster);
  if (ds === null) return { unsupported: 'psrr-ss on data other than a bundled dataset (adult, census-income) without data_dir or schema' };
  const eps = privacy?.eps_l;
  if (typeof eps !== 'number' || !Number.isFinite(eps)) return { err: 'the signed privacy statement has no numeric eps_l' };
  const d = ds.domainSizes.length, kMax = Math.max(...ds.domainSizes), bound = Math.max(d, kMax);
  const rows = rounds[0].get('reports') ?? [];
  const C = Array.from({ length: d }, () => new Array(kMax).fill(0));
  let n = 0, malformed = 0, received = 0;
  for (const r of rows) {
    if (r.length !== 2) return { err: 'psrr-ss reports must have width 2' };
    const [th, y] = r;
    if (th >= 0 && th < bound && y >= 0 && y < bound) received += 1;
    if (th >= 0 && th < d && y >= 0 && y < kMax) { C[th][y] += 1; n += 1; } else malformed += 1;
  }
  if (n === 0) return { err: 'psrr-ss: no well-formed reports' };
  let dummy = 0;
  ds.domainSizes.forEach((k, j) => { for (let y = k; y < kMax; y++) dummy += C[j][y]; });
  const paper = C.map((row, j) => grrFreqs(row, kMax, eps, n / d).slice(0, ds.domainSizes[j]));
  const observed = C.map((row, j) => { const ni = row.reduce((a, x) => a + x, 0); return grrFreqs(row, kMax, eps, ni > 0 ? ni : NaN).slice(0, ds.domainSizes[j]); });
  return { estimate: multidimPackage('psrr-ss', ds, { paper, observed }, n - dummy, malformed + dummy), n: rows.length, received: [received] };
}
function srrMs(rounds, cluster, privacy) {
  const ds = categorical(cluster);
  if (ds === null) return { unsupported: 'srr-ms on data other than a bundled dataset (adult, census-income) without data_dir or schema' };
  const epsList = privacy?.eps_l;
  const d = ds.domainSizes.length;
  if (!Array.isArray(epsList) || epsList.length !== d || !epsList.every((e) => e === null || (typeof e === 'number' && Number.isFinite(e)))) return { err: `the signed privacy statement's eps_l is not a list of ${d} numbers or nulls` };
  const paper = [], observed = [], perRelease = [];
  let reports = 0, malformed = 0, total = 0;
  for (let j = 0; j < d; j++) {
    const k = ds.domainSizes[j], eps = epsList[j];
    const rows = rounds[0].get(`a${j}`) ?? [];
    total += rows.length;
    if (rows.some((r) => r.length !== 1)) return { err: `srr-ms batch a${j} must have width 1` };
    if (eps === null) { malformed += rows.length; paper.push(null); observed.push(null); continue; }
    const c = new Array(k).fill(0);
    let ok = 0;
    for (const [y] of rows) if (y >= 0 && y < k) { c[y] += 1; ok += 1; }
    reports += ok; malformed += rows.length - ok;
    perRelease.push(ok);
    paper.push(grrFreqs(c, k, eps, ds.n / d));
    observed.push(ok > 0 ? grrFreqs(c, k, eps, ok) : new Array(k).fill(NaN));
  }
  // L-3: one release per feasible attribute, in attribute order, counting its batch
  return { estimate: multidimPackage('srr-ms', ds, { paper, observed }, reports, malformed), n: total, received: { releases: perRelease } };
}

// arr-ss (spec K-6): one K-RR over the concatenated domains, K = sum k_j, scaled by d
function arrSs(rounds, cluster, privacy) {
  const ds = categorical(cluster);
  if (ds === null) return { unsupported: 'arr-ss on data other than a bundled dataset (adult, census-income) without data_dir or schema' };
  if (ds.estimator !== 'paper') return { err: `arr-ss has only the paper estimator, params name ${ds.estimator}` };
  const eps = privacy?.eps_l;
  if (typeof eps !== 'number' || !Number.isFinite(eps)) return { err: 'the signed privacy statement has no numeric eps_l' };
  const d = ds.domainSizes.length, K = ds.domainSizes.reduce((a, k) => a + k, 0), bound = Math.max(d, ...ds.domainSizes);
  const offsets = ds.domainSizes.map((_, j) => ds.domainSizes.slice(0, j).reduce((a, k) => a + k, 0));
  const rows = rounds[0].get('reports') ?? [];
  const c = new Array(K).fill(0);
  let n = 0, received = 0;
  for (const r of rows) {
    if (r.length !== 2) return { err: 'arr-ss reports must have width 2' };
    const [th, y] = r;
    if (th >= 0 && th < bound && y >= 0 && y < bound) received += 1;
    if (th >= 0 && th < d && y >= 0 && y < ds.domainSizes[th]) { c[offsets[th] + y] += 1; n += 1; }
  }
  if (n === 0) return { err: 'arr-ss: no well-formed reports' };
  const f = debias('grr', c, K, eps, n).map((x) => d * x);
  const paper = ds.domainSizes.map((k, j) => f.slice(offsets[j], offsets[j] + k));
  return { estimate: multidimPackage('arr-ss', ds, { paper }, n, rows.length - n), n: rows.length, received: [received] };
}
// bit vectors of width k: column sums of the well-formed ones (every entry 0 or 1)
function bitCounts(rows, k) {
  const c = new Array(k).fill(0);
  let ok = 0;
  for (const r of rows) {
    if (r.length !== k) throw new Error(`bit vectors must have width ${k}`);
    if (r.every((b) => b === 0 || b === 1)) { ok += 1; r.forEach((b, v) => { c[v] += b; }); }
  }
  return { c, ok };
}
// sue-ms (spec K-6): SRR-MS's groups, each reporting its attribute with SUE at eps_l
function sueMs(rounds, cluster, privacy) {
  const ds = categorical(cluster);
  if (ds === null) return { unsupported: 'sue-ms on data other than a bundled dataset (adult, census-income) without data_dir or schema' };
  const eps = privacy?.eps_l;
  if (!(eps === null || (typeof eps === 'number' && Number.isFinite(eps)))) return { err: 'the signed privacy statement\'s eps_l is not a number or null' };
  const d = ds.domainSizes.length;
  const paper = [], observed = [], perRelease = [];
  let reports = 0, malformed = 0, total = 0;
  try {
    for (let j = 0; j < d; j++) {
      const k = ds.domainSizes[j], rows = rounds[0].get(`a${j}`) ?? [];
      total += rows.length;
      if (eps === null) { malformed += rows.length; paper.push(null); observed.push(null); continue; }
      const { c, ok } = bitCounts(rows, k);
      reports += ok; malformed += rows.length - ok;
      perRelease.push(ok);
      paper.push(debias('sue', c, k, eps, ds.n / d));
      observed.push(ok > 0 ? debias('sue', c, k, eps, ok) : new Array(k).fill(NaN));
    }
  } catch (e) { return { err: `sue-ms: ${e.message}` }; }
  return { estimate: multidimPackage('sue-ms', ds, { paper, observed }, reports, malformed), n: total, received: { releases: perRelease } };
}
// oue-ldp (spec K-6): each user samples an attribute and reports it with OUE at params.epsilon
function oueLdp(rounds, cluster) {
  const ds = categorical(cluster);
  if (ds === null) return { unsupported: 'oue-ldp on data other than a bundled dataset (adult, census-income) without data_dir or schema' };
  const eps = Number(cluster.params.epsilon ?? 1.0);
  const d = ds.domainSizes.length;
  const paper = [], observed = [];
  let reports = 0, malformed = 0, total = 0;
  try {
    for (let j = 0; j < d; j++) {
      const k = ds.domainSizes[j], rows = rounds[0].get(`a${j}`) ?? [];
      total += rows.length;
      const { c, ok } = bitCounts(rows, k);
      reports += ok; malformed += rows.length - ok;
      paper.push(debias('oue', c, k, eps, ds.n / d));
      observed.push(ok > 0 ? debias('oue', c, k, eps, ok) : new Array(k).fill(NaN));
    }
  } catch (e) { return { err: `oue-ldp: ${e.message}` }; }
  return { estimate: multidimPackage('oue-ldp', ds, { paper, observed }, reports, malformed), n: total, received: [reports] };
}

// hist_kr (spec K-7): one d-RR report per user, counts = m x GRR(d, eps_local) frequencies
function histKr(rounds, cluster, privacy) {
  const d = Number(cluster.params.domain ?? 64), eps = privacy?.eps_local;
  if (typeof eps !== 'number' || !Number.isFinite(eps)) return { err: 'the signed privacy statement has no numeric eps_local' };
  const rows = rounds[0].get('reports') ?? [];
  const c = new Array(d).fill(0);
  let m = 0;
  for (const r of rows) {
    if (r.length !== 1) return { err: 'hist_kr reports must have width 1' };
    if (r[0] >= 0 && r[0] < d) { c[r[0]] += 1; m += 1; }
  }
  if (m === 0) return { err: 'hist_kr: no well-formed report' };
  return { estimate: { counts: debias('grr', c, d, eps, m).map((f) => f * m), reports: m, invalid: rows.length - m }, n: rows.length, received: [m] };
}
// cnt_rr (spec K-7): Boolean RR, count of ones (ones - lambda m / 2) / (1 - lambda)
function cntRr(rounds, cluster, privacy) {
  const eps = privacy?.eps_local;
  if (typeof eps !== 'number' || !Number.isFinite(eps)) return { err: 'the signed privacy statement has no numeric eps_local' };
  const rows = rounds[0].get('bits') ?? [];
  let m = 0, ones = 0;
  for (const r of rows) {
    if (r.length !== 1) return { err: 'cnt_rr bits must have width 1' };
    if (r[0] === 0 || r[0] === 1) { m += 1; ones += r[0]; }
  }
  if (m === 0) return { err: 'cnt_rr: no well-formed report' };
  const lam = 2 / (Math.exp(eps) + 1);
  return { estimate: { count: (ones - lam * m / 2) / (1 - lam), reports: m, invalid: rows.length - m }, n: rows.length, received: [m] };
}

export const ESTIMATORS = {
  hist_kr: { rounds: 1, fn: histKr }, cnt_rr: { rounds: 1, fn: cntRr },
  grr: { rounds: 1, fn: grr }, gfim: { rounds: 2, fn: gfim }, 'psrr-ss': { rounds: 1, fn: psrrSs }, 'srr-ms': { rounds: 1, fn: srrMs },
  'arr-ss': { rounds: 1, fn: arrSs }, 'sue-ms': { rounds: 1, fn: sueMs }, 'oue-ldp': { rounds: 1, fn: oueLdp },
};

// the batches of each round and their bounds (spec K-1, K-4), for V-30; null when this
// verifier does not know the protocol's batches
export function batchBounds(cluster) {
  if (cluster.protocol === 'grr') return [{ reports: Number(cluster.params.domain ?? 10) }];
  if (cluster.protocol === 'hist_kr') return [{ reports: Number(cluster.params.domain ?? 64) }];
  if (cluster.protocol === 'cnt_rr') return [{ bits: 2 }];
  if (['psrr-ss', 'arr-ss', 'srr-ms', 'sue-ms', 'oue-ldp'].includes(cluster.protocol)) {
    const ds = categorical(cluster);
    if (ds === null) return null;
    const d = ds.domainSizes.length;
    if (cluster.protocol === 'srr-ms') return [Object.fromEntries(ds.domainSizes.map((k, j) => [`a${j}`, k]))];
    if (cluster.protocol === 'sue-ms' || cluster.protocol === 'oue-ldp') return [Object.fromEntries(ds.domainSizes.map((k, j) => [`a${j}`, 2]))];
    return [{ reports: Math.max(d, ...ds.domainSizes) }];
  }
  if (cluster.protocol === 'gfim') {
    const g = gfimParams(cluster);
    return g === null ? null : [{ phase1: hadamardOrder(g.d) }, { phase2: hadamardOrder(g.kMax) }];
  }
  return null;
}
