// Known-answer vectors (tests/vectors/mixnet_fs.json, tests/vectors/spec/encodings.json) and the
// spec's honest and invalid run directories, checked with node's built-in test runner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { canonical, parse } from '../lib/cjson.mjs';
import * as cbor from '../lib/cbor.mjs';
import { concat, fsHash, fsScalar, generators, hashToPoint, hex, le8, scalarBytes, scalarVector, utf8 } from '../lib/group.mjs';
import { loadCluster } from '../lib/transcripts.mjs';
import { runChecks } from '../lib/run.mjs';
import { sha512 } from '@noble/hashes/sha2.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const FS = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/vectors/mixnet_fs.json'), 'utf8'));
const SPEC = path.join(ROOT, 'tests/vectors/spec');
const ENC = JSON.parse(fs.readFileSync(path.join(SPEC, 'encodings.json'), 'utf8'));
const H = (s) => Uint8Array.from(Buffer.from(s, 'hex'));

function part(desc) {
  const [kind, ...rest] = desc.split(' ');
  const v = rest.join(' ');
  if (kind === 'bytes') return H(v);
  if (kind === 'str') return v.slice(1, -1);
  if (kind === 'int') return BigInt(v);
  if (kind === 'bool') return v === 'true';
  throw new Error(desc);
}

test('F-1 fs_hash and fs_scalar', () => {
  assert.equal(hex(fsHash(FS.fs_hash.label, ...FS.fs_hash.parts.map(part))), FS.fs_hash.out);
  assert.equal(hex(scalarBytes(fsScalar(FS.fs_scalar.label, ...FS.fs_scalar.parts.map(part)))), FS.fs_scalar.out);
});

test('F-2 scalar_vector', () => {
  const v = FS.scalar_vector;
  assert.deepEqual(scalarVector(H(v.seed), v.n).map((x) => hex(scalarBytes(x))), v.out);
});

test('G-3 hash_to_point and generators', () => {
  assert.equal(hex(hashToPoint(...FS.hash_to_point.parts.map(H)).toBytes()), FS.hash_to_point.out);
  assert.deepEqual(generators(H(FS.generators.domain), FS.generators.n).map((p) => hex(p.toBytes())), FS.generators.out);
  const g = FS.shuffle_generators;
  const sess = H(g.sess);
  const hs = generators(concat([utf8('sdp-mixnet-v1|shuffle-Hi|'), sess, utf8('|'), utf8(g.batch)]), g.n);
  const h0 = hashToPoint(utf8('sdp-mixnet-v1|'), utf8('shuffle-H'), sess, utf8(g.batch));
  assert.deepEqual([h0, ...hs].map((p) => hex(p.toBytes())), g.out);
});

test('F-3 challenges: client, DKG, DLEQ, decryption seed, dkg digest, session digest', () => {
  const c = FS.client_challenge;
  assert.equal(hex(scalarBytes(fsScalar('client-pok', H(c.sess), c.client, c.batch, c.index, concat(c.a.map(H)), concat(c.b.map(H)), concat(c.t.map(H))))), c.out);
  const d = FS.dkg_pok_challenge;
  assert.equal(hex(scalarBytes(fsScalar('dkg-pok', d.session_id, d.server, H(d.c0), H(d.t)))), d.out);
  const q = FS.dleq_challenge;
  assert.equal(hex(scalarBytes(fsScalar('dleq|' + q.label, H(q.ctx), H(q.g1), H(q.y1), H(q.g2), H(q.y2), H(q.t1), H(q.t2)))), q.out);
  const s = FS.dec_share_seed;
  assert.equal(hex(fsHash('dec-rlc', H(s.sess), s.server, s.batch, concat(s.dset.map((j) => le8(j))), s.bs.length, ...s.bs.map((col) => concat(col.map(H))), ...s.ds.map((col) => concat(col.map(H))))), s.out);
  const k = FS.dkg_digest;
  const parts = [];
  for (const i of Object.keys(k.commitments).map(Number).sort((a, b) => a - b)) parts.push(i, concat(k.commitments[i].map(H)));
  assert.equal(hex(fsHash('dkg', ...parts)), k.out);
  const sd = FS.session_digest;
  const params = new Map([['k', sd.params.k], ['t', sd.params.t], ['servers', sd.params.servers],
    ['batches', sd.params.batches.map((b) => new Map(Object.entries(b)))]]);
  assert.equal(hex(fsHash('session', sd.session_id, H(sd.pk), H(sd.dkg_digest), cbor.encode(params))), sd.out);
});

test('E-3 ciphertexts digest, shuffle seeds and challenge', () => {
  const c = FS.ciphertexts_digest;
  const dg = (a, b) => sha512(concat([utf8('sdp-mixnet-v1|ciphertexts|'), le8(a.length), le8(a[0].length / 32), ...a, ...b]));
  const cd = dg([concat(c.a.map(H))], [concat(c.b.map(H))]);
  assert.equal(hex(cd), c.out);
  const p = FS.perm_challenge_seed;
  const out = dg([concat(p.output_a.map(H))], [concat(p.output_b.map(H))]);
  assert.equal(hex(fsHash('shuffle-u', H(p.sess), p.step, p.batch, cd, out, concat(p.c.map(H)))), p.out);
  const s = FS.shuffle_challenge;
  const j = (xs) => concat(xs.map(H));
  assert.equal(hex(scalarBytes(fsScalar('shuffle-c', H(s.useed), j(s.chat), j(s.that), H(s.t1), H(s.t2), H(s.t3), j(s.t4a), j(s.t4b)))), s.out);
});

test('E-1 canonical JSON', () => {
  for (const c of ENC.canonical_json) assert.equal(canonical(parse(c.value_json)), c.canonical);
});

test('E-2 canonical CBOR', () => {
  const untag = (x) => {
    if (Array.isArray(x)) return x.map(untag);
    if (x && typeof x === 'object') {
      if ('bytes' in x) return H(x.bytes);
      if ('float' in x) return new cbor.CFloat(x.float);
      if ('int' in x) return BigInt(x.int);
      if ('map' in x) return new Map(x.map.map(([k, v]) => [untag(k), untag(v)]));
    }
    return x;
  };
  for (const c of ENC.canonical_cbor) {
    assert.equal(hex(cbor.encode(untag(c.value))), c.cbor_hex);
    // decoding and re-encoding is the identity on float-free values (the re-hashed artifacts)
    if (!JSON.stringify(c.value).includes('float')) assert.equal(hex(cbor.encode(cbor.decode(H(c.cbor_hex)))), c.cbor_hex);
  }
});

test('C-3 cluster digest', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spec-'));
  fs.writeFileSync(path.join(dir, 'cluster.toml'), ENC.cluster_digest.cluster_toml);
  assert.equal(loadCluster(dir).digest, ENC.cluster_digest.digest);
});

const trust = () => JSON.parse(fs.readFileSync(path.join(SPEC, 'run.trust.json'), 'utf8'));

test('honest two-round mix-net run verifies', () => {
  const r = runChecks(path.join(SPEC, 'run'), trust());
  assert.ok(r.checks.every((c) => c.ok), JSON.stringify(r.checks.filter((c) => !c.ok)));
  const ids = new Set(r.checks.map((c) => c.id));
  for (const id of ['V-1', 'V-2', 'V-3', 'V-4', 'V-5', 'V-10', 'V-11', 'V-13', 'V-14', 'V-15', 'V-16', 'V-17', 'V-18', 'V-20', 'V-21', 'V-22']) assert.ok(ids.has(id), id);
});

function copyRun() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spec-run-'));
  fs.cpSync(path.join(SPEC, 'run'), dir, { recursive: true });
  return dir;
}
const firstFailure = (r) => r.checks.find((c) => !c.ok)?.id;

test('an edited public blob fails V-3', () => {
  const dir = copyRun();
  const blobs = path.join(dir, 'transcripts', 'mix-2.blobs');
  const f = path.join(blobs, fs.readdirSync(blobs)[0]);
  const b = fs.readFileSync(f); b[0] ^= 1; fs.writeFileSync(f, b);
  assert.equal(firstFailure(runChecks(dir, trust())), 'V-3');
});

test('an edited cluster file fails V-1 against the trust anchor and V-3 without it', () => {
  const dir = copyRun();
  const p = path.join(dir, 'cluster.toml');
  fs.writeFileSync(p, fs.readFileSync(p, 'utf8').replace('users = 100', 'users = 101'));
  assert.equal(firstFailure(runChecks(dir, trust())), 'V-1');
  assert.equal(firstFailure(runChecks(dir, null)), 'V-3');
});

test('a truncated transcript of a needed party fails V-4', () => {
  const dir = copyRun();
  const p = path.join(dir, 'transcripts', 'analyzer.jsonl');
  const lines = fs.readFileSync(p, 'utf8').split('\n').filter(Boolean);
  fs.writeFileSync(p, lines.slice(0, -1).join('\n') + '\n');
  assert.equal(firstFailure(runChecks(dir, trust())), 'V-4');
});

test('honest grr run: the estimate is recomputed (V-21)', () => {
  const t = JSON.parse(fs.readFileSync(path.join(SPEC, 'grr-run.trust.json'), 'utf8'));
  const r = runChecks(path.join(SPEC, 'grr-run'), t);
  assert.ok(r.checks.every((c) => c.ok), JSON.stringify(r.checks.filter((c) => !c.ok)));
  assert.ok(r.checks.some((c) => c.id === 'V-21' && c.ok));
});
