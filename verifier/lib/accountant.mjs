// The privacy accountant of docs/spec/07-privacy.md, written from the spec alone (no code shared
// with protocols/accountant/): the blanket-decomposition bound A-2 evaluated by exact enumeration
// of the crowd's counts, the FMT21 clone pair, the forward check A-4 and the
// calibration check A-5.

// A-1 log Gamma (Lanczos, g = 7, 9 terms: relative error below 1e-15 for x >= 1)
const LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
  -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
export function lgamma(x) {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lgamma(1 - x);
  x -= 1;
  let a = LANCZOS[0];
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += LANCZOS[i] / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}

function logPmf(k, n, p) {
  if (p <= 0) return k === 0 ? 0 : -Infinity;
  if (p >= 1) return k === n ? 0 : -Infinity;
  return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) + k * Math.log(p) + (n - k) * Math.log1p(-p);
}

// Bin(n, p) on a window [lo, lo + pmf.length) holding all but `outside` of its mass (spec A-1):
// the pmf from the mode outwards by the ratio recurrence, stopped where a term is below
// tail/(n+1). The ratios fall away from the mode, so each side's outside mass is at most the
// geometric series of its last term and ratio; the window is scaled to 1 - outside (the
// recurrence fixes the pmf up to a common factor: no dependence on lgamma's accuracy at large n).
export function binomialWindow(n, p, tail) {
  if (n === 0 || p <= 0) return { lo: 0, pmf: [1], outside: 0 };
  if (p >= 1) return { lo: n, pmf: [1], outside: 0 };
  const mode = Math.min(n, Math.floor((n + 1) * p));
  const up = [], down = [];
  const r = p / (1 - p), stop = tail / (n + 1);
  let outside = 0;
  for (let k = mode, v = 1; k < n;) {
    const q = r * (n - k) / (k + 1); v *= q; k++;
    if (v < stop * 1) { outside += q < 1 ? v / (1 - q) : v * (n - k + 1); break; }
    up.push(v);
  }
  for (let k = mode, v = 1; k > 0;) {
    const q = k / (r * (n - k + 1)); v *= q; k--;
    if (v < stop * 1) { outside += q < 1 ? v / (1 - q) : v * (k + 1); break; }
    down.push(v);
  }
  const pmf = [...down.reverse(), 1, ...up];
  const scale = 1 / pmf.reduce((a, x) => a + x, 0);  // relative masses -> probabilities
  outside *= scale;
  for (let i = 0; i < pmf.length; i++) pmf[i] *= scale * (1 - Math.min(outside, 1));
  return { lo: mode - down.length, pmf, outside: Math.min(outside, 1) };
}

// A-2 the blanket corners of a mechanism: u = e^eps0 ratio, w10 = w01, w11, w00 (unconditional)
export function corners(mechanism, epsLocal, k = null) {
  const e = Math.exp(epsLocal);
  if (!(epsLocal > 0) || !Number.isFinite(epsLocal)) throw new Error(`local epsilon must be finite and > 0, got ${epsLocal}`);
  if (mechanism === 'grr' || mechanism === 'olh') {
    if (!Number.isInteger(k) || k < 2) throw new Error(`${mechanism} needs k >= 2`);
    const g = k / (e + k - 1);
    return { u: e, w10: g / k, w11: 0, w00: g * (k - 2) / k };
  }
  if (mechanism === 'hadamard') { const g = 2 / (e + 1); return { u: e, w10: g / 4, w11: g / 4, w00: g / 4 }; }
  if (mechanism === 'generic') { const g = 2 / (e + 1); return { u: e, w10: g / 2, w11: 0, w00: 0 }; }
  if (mechanism === 'oue' || mechanism === 'sue') {
    let p, q;
    if (mechanism === 'oue') { p = 0.5; q = 1 / (e + 1); } else { const s = Math.exp(epsLocal / 2); p = s / (s + 1); q = 1 / (s + 1); }
    const g = (1 - p) / (1 - q), u = (p / q) / ((1 - p) / (1 - q));
    return { u, w10: g * q * (1 - q), w11: g * q * q, w00: g * (1 - q) * (1 - q) };
  }
  throw new Error(`mechanism ${mechanism} is not in spec 07 A-2`);
}

// A-3 delta(eps) = (1/n) E[(G_1 + .. + G_n)_+] of the blanket GPARV, by enumeration of T
// (informative corners), N (neutral corners), B (the (u,u) corner among them) and a closed form
// over A ~ Bin(T, 1/2) (the (u,1) corner). Mass outside the windows is charged with the largest
// value S/n can take, so the result is an upper value within `tail` of the exact one.
export function decompositionDelta(eps, n, c, tail = 1e-15) {
  const a = Math.exp(eps), { u, w10, w11, w00 } = c;
  const v10 = u - a, v01 = 1 - a * u;
  if (v10 <= 0) return 0;
  const slope = v10 - v01;
  let total = 0, charged = 0;
  const bwin = new Map();
  const tw = binomialWindow(n, 2 * w10, tail);
  charged += tw.outside;
  const rest = 1 - 2 * w10, pn = rest > 0 ? Math.min(1, (w11 + w00) / rest) : 0, pb = w11 + w00 > 0 ? w11 / (w11 + w00) : 0;
  for (let i = 0; i < tw.pmf.length; i++) {
    const T = tw.lo + i, pT = tw.pmf[i];
    // suffix sums of Bin(T, 1/2) over its window: P[A >= j], E[A; A >= j] (outside: charged)
    const aw = binomialWindow(T, 0.5, tail);
    charged += pT * aw.outside;
    const L = aw.pmf.length, pa = new Float64Array(L + 1), ea = new Float64Array(L + 1);
    for (let j = L - 1; j >= 0; j--) { pa[j] = pa[j + 1] + aw.pmf[j]; ea[j] = ea[j + 1] + (aw.lo + j) * aw.pmf[j]; }
    const nw = binomialWindow(n - T, pn, tail);
    charged += pT * nw.outside;
    for (let jn = 0; jn < nw.pmf.length; jn++) {
      const N = nw.lo + jn, pN = pT * nw.pmf[jn];
      if (pN === 0) continue;
      let bw = bwin.get(N);
      if (bw === undefined) { bw = binomialWindow(N, pb, tail); bwin.set(N, bw); }
      charged += pN * bw.outside;
      for (let jb = 0; jb < bw.pmf.length; jb++) {
        const B = bw.lo + jb, w = pN * bw.pmf[jb];
        const R = (1 - a) * (u * B + N - B), base = T * v01 + R;
        // S = slope * A + base > 0  <=>  A > -base / slope
        const x = -base / slope;
        const j0 = Math.max(0, (x < 0 ? 0 : Math.floor(x) + 1) - aw.lo);
        if (j0 >= L) continue;
        total += w * (slope * ea[j0] + base * pa[j0]);
      }
    }
  }
  return Math.max(0, total) / n + charged * Math.max(v10, 0);
}

// A-8 delta(eps) of the FMT21 clone pair (Feldman, McMillan, Talwar 2021) for n users of any
// eps0-LDP randomizer: C ~ Bin(n - 1, e^-eps0) clones, A ~ Bin(C, 1/2); given C = c the
// hockey-stick divergence of P(a) = a0 Pr[A = a-1] + a1 Pr[A = a] against Q(a) = a1 Pr[A = a-1]
// + a0 Pr[A = a] (a0 = e^eps0/(e^eps0+1), a1 = 1 - a0) is (a0 - E a1) Pr[A >= j-1] + (a1 - E a0)
// Pr[A >= j], E = e^eps, j = ceil((c+1)(E a0 - a1)/((a0 - a1)(1 + E))). Mass outside the
// windows is charged 1 (the divergence is at most 1): an upper value within `tail` of the exact.
export function fmt21Delta(eps, n, epsLocal, tail = 1e-15) {
  if (!(epsLocal > 0) || !Number.isFinite(epsLocal)) throw new Error(`local epsilon must be finite and > 0, got ${epsLocal}`);
  const e0 = Math.exp(epsLocal), a0 = e0 / (e0 + 1), a1 = 1 / (e0 + 1), E = Math.exp(eps);
  const cw = binomialWindow(n - 1, Math.min(1, 1 / e0), tail);
  let total = 0, charged = cw.outside;
  for (let i = 0; i < cw.pmf.length; i++) {
    const c = cw.lo + i, pC = cw.pmf[i];
    const j = Math.ceil((c + 1) * (E * a0 - a1) / ((a0 - a1) * (1 + E)));
    const aw = binomialWindow(c, 0.5, tail);
    charged += pC * aw.outside;
    const sf = (x) => { let s = 0; for (let t = Math.max(0, x - aw.lo); t < aw.pmf.length; t++) s += aw.pmf[t]; return s; };
    const d = (a0 - E * a1) * sf(j - 1) + (a1 - E * a0) * sf(j);
    total += pC * Math.max(d, 0);
  }
  return total + charged;
}

// the delta curve of a bound at a local epsilon: {fmt21: eps0} (A-8) for fmt21, else A-2's
// corners (A-3: vr, decomposition, and exact where its search does not apply, k-RR with k >= 3)
export const curve = (bound, mechanism, epsLocal, k = null) => (bound === 'fmt21' ? { fmt21: epsLocal } : corners(mechanism, epsLocal, k));
const deltaOf = (eps, n, c) => (c.fmt21 !== undefined ? fmt21Delta(eps, n, c.fmt21) : decompositionDelta(eps, n, c));

// A-4 forward: the stated central eps is sound (delta(eps) <= delta) and tight to rel `tau`
// (delta(eps (1 - tau)) > delta); returns null when both hold, else the reason. `c`: curve().
export function forwardFailure(eps, delta, n, c, tau = 5e-2) {
  const at = deltaOf(eps, n, c);
  if (at > delta * (1 + 1e-6)) return `delta at the stated eps ${eps} is ${at.toExponential(4)} > ${delta}`;
  const below = deltaOf(eps * (1 - tau), n, c);
  if (!(below > delta)) return `the stated eps ${eps} is not tight: eps ${eps * (1 - tau)} already gives delta ${below.toExponential(4)} <= ${delta}`;
  return null;
}

// A-5 calibration: eps_l is admissible for the target (delta at target (1 - 1e-4) <= delta) and
// near-maximal (eps_l (1 + tau) is not); eps_l <= target is always admissible (post-processing).
// `mech`: {mechanism, k, bound} (bound fmt21: A-8's curve, else A-3's)
export function calibrationFailure(epsLocal, target, delta, n, mech, tau = 5e-2) {
  const ok = (e) => e <= target || deltaOf(target * (1 - 1e-4), n, curve(mech.bound, mech.mechanism, e, mech.k)) <= delta * (1 + 1e-6);
  if (!ok(epsLocal)) return `eps_local ${epsLocal} does not meet the target ${target} at n = ${n}, delta = ${delta}`;
  if (ok(epsLocal * (1 + tau)) && epsLocal * (1 + tau) < 40) return `eps_local ${epsLocal} is not the calibrated one: ${epsLocal * (1 + tau)} also meets the target`;
  return null;
}

// A-6 the Balle et al. 2019 closed form for k-RR: eps_c, or null outside the theorem
export function balleEpsilon(epsLocal, n, delta, k) {
  const c = Math.sqrt(14 * Math.log(2 / delta) * (Math.exp(epsLocal) + k - 1) / (n - 1));
  if (c > 1 || (n - 1) * c < 27 * (Math.exp(epsLocal) + k - 1) || c >= epsLocal) return null;
  return c;
}

// A-6 inverse: e^eps_l = eps_c^2 (n - 1) / (14 ln(2/delta)) - k + 1, conditions checked
export function balleMaxLocal(target, n, delta, k) {
  if (!(target > 0 && target <= 1)) return null;
  const x = target ** 2 * (n - 1) / (14 * Math.log(2 / delta)) - k + 1;
  if (x <= 1) return null;
  const e = Math.log(x);
  return (n - 1) * target < 27 * (Math.exp(e) + k - 1) ? null : e;
}
