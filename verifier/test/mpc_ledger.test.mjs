// Unit tests of V-30's field arithmetic (spec 06 S-1) and V-23's composition (spec 06 L-2).
import test from 'node:test';
import assert from 'node:assert/strict';
import { P, consistentMask, lagrange, reconstruct } from '../lib/mpc.mjs';
import { compose, checkLedger, COMPOSITION } from '../lib/ledger.mjs';

// Shamir shares of `secrets` among m servers (x = 1..m) with a degree-t polynomial
function share(secrets, m, t) {
  const B = BigInt(P);
  return Array.from({ length: m }, (_, j) => secrets.map((s, i) => {
    const x = BigInt(j + 1);
    let y = 0n;
    for (let d = t; d >= 1; d--) y = ((y + BigInt(1000003 * (i + 1) * d % P)) * x) % B;
    return Number((y + BigInt(s)) % B);
  }));
}

test('S-1: Lagrange coefficients at 0 of the points 1, 2 are 2, -1', () => {
  assert.deepEqual(lagrange([1, 2], 0), [2, P - 1]);
});

test('S-1: shares on a degree-t polynomial are consistent and reconstruct the secrets', () => {
  const secrets = [0, 1, 7, P - 1, 123456789];
  const rows = share(secrets, 5, 2);
  assert.ok(consistentMask(rows, 2).every(Boolean));
  assert.deepEqual(reconstruct(rows, 2), secrets);
  rows[4][2] = (rows[4][2] + 1) % P;  // one server deviates on value 2
  assert.deepEqual(consistentMask(rows, 2), [true, true, false, true, true]);
});

test('L-2: composition is a sum over shared releases plus the maximum over groups', () => {
  const r = (eps, delta, group, kind = 'upper') => ({ eps, delta, group, kind, reaccounted: false });
  const total = compose([r(1, 1e-6, null), r(0.5, 0, 'G1'), r(0.25, 0, 'G1'), r(2, 1e-7, 'G2')]);
  assert.deepEqual(total, { eps: 3, delta: 1e-6 + 1e-7, kind: 'upper', composition: COMPOSITION, releases: 4, reaccounted: false });
  assert.equal(compose([r(1, 0, null, 'exact')]).kind, 'exact');
});

test('L-1: a release accounted for more reports than received fails unless re-accounted', () => {
  const rel = { what: 'x', mechanism: 'm', eps: 1, delta: 0, n_accounted: 10, n_received: 9, bound: 'b', kind: 'upper', round: 0, group: null, reaccounted: false, note: '' };
  const priv = (x) => ({ releases: [x], total: compose([x]) });
  assert.equal(checkLedger(priv(rel), 1, null).ok, false);
  assert.equal(checkLedger(priv({ ...rel, n_accounted: 9, reaccounted: true }), 1, null).ok, true);
  assert.equal(checkLedger(priv({ ...rel, n_accounted: 9 }), 1, [8]).ok, false);  // L-3
});
