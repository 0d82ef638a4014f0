// Known answers of the linear debiasing estimators (docs/spec/06-estimates.md K-6, LD-1),
// worked out by hand for small multisets on the adult schema (d = 15, k_0 = 16, K = 212).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ESTIMATORS, batchBounds } from '../lib/estimates.mjs';

const close = (a, b) => assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${a} != ${b}`);
const bits = (k, set) => Array.from({ length: k }, (_, v) => (set.includes(v) ? 1 : 0));
const run = (protocol, params, batches, privacy = null) => ESTIMATORS[protocol].fn([new Map(Object.entries(batches))], { protocol, params }, privacy);

test('oue-ldp: p = 1/2, q = 1/(e^eps + 1); paper N = n/d, observed N = the well-formed count', () => {
  // eps = ln 3: q = 1/4, p - q = 1/4; users = 15, so n/d = 1
  const r = run('oue-ldp', { users: 15, epsilon: Math.log(3) }, { a0: [bits(16, [0]), bits(16, []), [2, ...bits(15, [])]] });
  const e = r.estimate;
  close(e.estimates.paper[0][0], 3); close(e.estimates.paper[0][5], -1);
  close(e.estimates.observed[0][0], 1); close(e.estimates.observed[0][5], -1);
  assert.ok(e.estimates.observed[1].every(Number.isNaN));
  assert.equal(e.reports, 2); assert.equal(e.discarded, 1);
  assert.deepEqual(r.received, [2]);
  assert.deepEqual(batchBounds({ protocol: 'oue-ldp', params: {} })[0].a3, 2);
});

test('sue-ms: p = e^(eps/2)/(e^(eps/2)+1), one release count per attribute; eps_l null: all null', () => {
  // eps = 2 ln 3: p = 3/4, q = 1/4
  const r = run('sue-ms', { users: 15 }, { a0: [bits(16, [0, 1]), bits(16, [1])], a1: [bits(7, [2])] }, { eps_l: 2 * Math.log(3) });
  close(r.estimate.estimates.paper[0][0], 1.5); close(r.estimate.estimates.paper[0][1], 3.5); close(r.estimate.estimates.paper[0][2], -0.5);
  close(r.estimate.estimates.observed[0][1], 1.5);
  assert.equal(r.received.releases.length, 15);
  assert.deepEqual(r.received.releases.slice(0, 3), [2, 1, 0]);
  const off = run('sue-ms', { users: 15 }, { a0: [bits(16, [0])] }, { eps_l: null });
  assert.ok(off.estimate.estimates.paper.every((x) => x === null));
  assert.equal(off.estimate.discarded, 1);
  assert.match(run('sue-ms', { users: 15 }, { a0: [[1, 0]] }, { eps_l: 1 }).err, /width 16/);
});

test('arr-ss: one K-RR over the concatenated domains, scaled by d', () => {
  // eps = ln 212: p = 212/423, q = 1/423; one report in cell 0 (attribute 0, value 0)
  const r = run('arr-ss', { users: 15 }, { reports: [[0, 0], [0, 16], [15, 0], [41, 0]] }, { eps_l: Math.log(212) });
  close(r.estimate.marginals[0][0], 30); close(r.estimate.marginals[0][1], -15 / 211); close(r.estimate.marginals[14][1], -15 / 211);
  assert.equal(r.estimate.marginals[14].length, 2);
  assert.equal(r.estimate.reports, 1); assert.equal(r.estimate.discarded, 3);
  assert.deepEqual(r.received, [3]); // malformed but inside the batch's bound 41: [0, 16], [15, 0]
  assert.match(run('arr-ss', { estimator: 'observed' }, { reports: [[0, 0]] }, { eps_l: 1 }).err, /only the paper estimator/);
  assert.match(run('arr-ss', {}, { reports: [[0, 0]] }, { eps_l: [1] }).err, /no numeric eps_l/);
});
