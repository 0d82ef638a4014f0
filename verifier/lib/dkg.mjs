// V-13: the mix-net's distributed key generation (docs/spec/05-mixnet.md D-1 .. D-6).
import { L, VerifyError, ZERO, concat, eqBytes, fsHash, fsScalar, msm, mul, mulBase, point, scalar } from './group.mjs';
import { get } from './util.mjs';

function evalCommit(comm, x) {
  const xs = []; let p = 1n;
  for (let m = 0; m < comm.length; m++) { xs.push(p); p = (p * BigInt(x)) % L; }
  return msm(comm, xs);
}
export function verifyDkg(sid, k, t, dkg) {
  const comms = new Map();
  const raw = get(dkg, 'commitments');
  for (let i = 1; i <= k; i++) {
    if (!raw.has(i)) continue;
    const cl = raw.get(i);
    if (!Array.isArray(cl) || cl.length !== t) throw new VerifyError(`dkg: dealer ${i} must publish ${t} commitments`);
    comms.set(i, { raw: cl, pts: cl.map((x, m) => point(x, `dkg.commitments[${i}][${m}]`)) });
  }
  const qual = new Set(comms.keys());
  for (const i of [...comms.keys()].sort((a, b) => a - b)) {
    const pok = get(get(dkg, 'pok'), i);
    let ok = false;
    try {
      const e = scalar(get(pok, 'e'), 'pok.e'), s = scalar(get(pok, 's'), 'pok.s');
      const c0 = comms.get(i).pts[0];
      const T = mulBase(s).subtract(mul(c0, e));
      ok = fsScalar('dkg-pok', sid, i, comms.get(i).raw[0], T.toBytes()) === e;
    } catch { ok = false; }
    if (!ok) qual.delete(i);
  }
  for (const comp of get(dkg, 'complaints', [])) {
    const d = get(comp, 'against');
    if (!comms.has(d)) continue;
    const share = get(comp, 'share', null);
    let ok = false;
    if (share !== null) {
      const sv = scalar(share, `dkg.complaint share of ${d}`);
      ok = mulBase(sv).equals(evalCommit(comms.get(d).pts, get(comp, 'by')));
    }
    if (!ok) qual.delete(d);
  }
  const qualL = [...qual].sort((a, b) => a - b);
  const pubQual = [...get(dkg, 'qual', [])].map(Number).sort((a, b) => a - b);
  if (JSON.stringify(qualL) !== JSON.stringify(pubQual)) throw new VerifyError(`dkg: published qualified set ${JSON.stringify(get(dkg, 'qual'))} != recomputed ${JSON.stringify(qualL)}`);
  if (qualL.length < t) throw new VerifyError(`dkg: only ${qualL.length} qualified dealers, threshold ${t}`);
  const pk = qualL.reduce((acc, i) => acc.add(comms.get(i).pts[0]), ZERO);
  const pkPub = get(dkg, 'pk');
  if (!(pkPub instanceof Uint8Array) || !eqBytes(pk.toBytes(), pkPub)) throw new VerifyError('dkg: published public key is not the sum of qualified dealers\' keys');
  const vks = new Map();
  for (let m = 1; m <= k; m++) {
    const y = qualL.reduce((acc, i) => acc.add(evalCommit(comms.get(i).pts, m)), ZERO);
    const pub = get(get(dkg, 'vks', new Map()), m);
    if (!(pub instanceof Uint8Array) || !eqBytes(pub, y.toBytes())) throw new VerifyError(`dkg: verification key of server ${m} does not match the commitments`);
    vks.set(m, y);
  }
  const parts = [];
  for (const i of qualL) parts.push(i, concat(comms.get(i).raw));
  return { pk, pkBytes: pkPub, vks, qual: qualL, dkgDigest: fsHash('dkg', ...parts) };
}
