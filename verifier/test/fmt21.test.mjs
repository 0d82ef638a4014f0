// Spec 07 A-8 (the FMT21 clone pair) against tests/vectors/spec/privacy.json (fmt21): the
// Python accountant's delta(eps) bracket, the brute force for n <= 8, and its forward and
// inverse maps, which must accept.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { calibrationFailure, curve, fmt21Delta, forwardFailure } from '../lib/accountant.mjs';

const doc = JSON.parse(fs.readFileSync(new URL('../../tests/vectors/spec/privacy.json', import.meta.url), 'utf8'));

test('A-8 delta(eps) lies in the Python bracket and equals the brute force', () => {
  const curves = doc.fmt21.filter((v) => v.eps !== undefined);
  assert.ok(curves.length >= 6);
  for (const v of curves) {
    const d = fmt21Delta(v.eps, v.n, v.eps_local);
    assert.ok(d >= v.delta_lower * (1 - 1e-6) && d <= v.delta_upper * (1 + 1e-6) + 1e-14, JSON.stringify({ d, v }));
    if (v.delta_exact !== undefined) assert.ok(Math.abs(d - v.delta_exact) <= 1e-9 * v.delta_exact, JSON.stringify({ d, v }));
  }
});

test('A-4 accepts the accountant fmt21 central epsilon, A-5 its calibrated local epsilon', () => {
  for (const v of doc.fmt21.filter((x) => x.eps === undefined)) {
    if (v.max_eps_local !== undefined) {
      assert.equal(calibrationFailure(v.max_eps_local, v.eps_central, v.delta, v.n, { bound: 'fmt21', mechanism: 'grr', k: 2 }), null, JSON.stringify(v));
      assert.notEqual(calibrationFailure(v.max_eps_local * 1.1 + 0.1, v.eps_central, v.delta, v.n, { bound: 'fmt21', mechanism: 'grr', k: 2 }), null);
    } else if (v.eps_central !== null) {
      assert.equal(forwardFailure(v.eps_central, v.delta, v.n, curve('fmt21', 'grr', v.eps_local, 2)), null, JSON.stringify(v));
      assert.notEqual(forwardFailure(v.eps_central * 0.9, v.delta, v.n, curve('fmt21', 'grr', v.eps_local, 2)), null);
    } else {  // no amplification: only an eps within 1e-4 of eps_local meets delta
      assert.ok(fmt21Delta(v.eps_local * (1 - 2e-4), v.n, v.eps_local) > v.delta);
    }
  }
});
