// Crashed incarnations of a restarted party (docs/spec/03-transcripts.md T-11, part of V-3).
import fs from 'node:fs';
import path from 'node:path';
import { checkTranscript } from './transcripts.mjs';

// every file of the transcripts folder named NAME.crashed-*.jsonl, sorted by name
export function crashedFiles(runDir, party) {
  const dir = path.join(runDir, 'transcripts');
  if (!fs.existsSync(dir)) return [];
  const prefix = `${party}.crashed-`;
  return fs.readdirSync(dir).filter((f) => f.startsWith(prefix) && f.endsWith('.jsonl') && f.length >= prefix.length + 6).sort();
}

// T-11: verify `current`'s earlier incarnations and attach them (current.crashed); returns the
// first failure or null
export function checkIncarnations(runDir, current, session, key, clusterDigest) {
  const party = current.party;
  const files = crashedFiles(runDir, party);
  const numbers = [];
  for (const f of files) {
    const m = /\.crashed-(\d+)\.jsonl$/.exec(f);
    if (m === null || f !== `${party}.crashed-${BigInt(m[1])}.jsonl`) return `${f}: not a crashed transcript name (${party}.crashed-K.jsonl, K = 0, 1, ...)`;
    numbers.push(Number(m[1]));
  }
  numbers.sort((a, b) => a - b);
  if (!numbers.every((k, i) => k === i)) return `${party}: crashed transcripts [${numbers.join(', ')}] are not incarnations 0..${numbers.length - 1} (one missing or extra)`;
  if (current.inc !== numbers.length) return `${party} entry 0: incarnation ${current.inc} is not backed by ${party}'s transcripts: ${numbers.length} crashed incarnation(s) prove incarnation ${numbers.length}`;
  const crashed = [];
  for (const k of numbers) {
    const { t, err } = checkTranscript(runDir, party, session, key, `${party}.crashed-${k}.jsonl`);
    if (err) return `${err} (crashed incarnation ${k} of ${party})`;
    if (t.cluster !== clusterDigest) return `${t.label} entry 0: opened for another cluster than cluster.toml's`;
    if (t.inc !== k) return `${t.label} entry 0: records incarnation ${t.inc}, its file says ${k}`;
    const close = t.entries.find((e) => e.dir === 'close');
    if (close) return `${t.label} entry ${close.i}: a closed transcript is not a crash (a party that closed its transcript has finished and is never restarted)`;
    const spoke = t.entries.find((e) => e.dir === 'speak' || (e.dir === 'send' && !String(e.ty ?? '_').startsWith('_')));
    if (spoke) return `${t.label} entry ${spoke.i}: incarnation ${k} sent '${spoke.ty}' to ${spoke.peer} and yet ${party} was restarted: a party that sent a protocol message cannot rejoin`;
    crashed.push(t);
  }
  current.crashed = crashed;
  return null;
}

// T-13 what a verifier says of a restarted party: "rejoined" only where a peer's signed rejoin
// entry records its last incarnation (the incarnation count proves a restart, not a rejoin)
function describe(c) {
  const recv = c.entries.filter((e) => e.dir === 'recv');
  const peers = [...new Set(recv.map((e) => String(e.peer)))].sort();
  const tail = c.unsignedTail ? `; its last ${c.unsignedTail} entries were cut by the crash (unsigned, ignored)` : '';
  return `${c.label}.jsonl (incarnation ${c.inc}): ${c.entries.length} signed entries, received ${recv.length} message(s)${peers.length ? ` from ${peers.join(', ')}` : ''}, sent no protocol message${tail}`;
}
export function restartLine(t, transcripts) {
  const peers = Object.keys(transcripts).filter((n) => n !== t.party && transcripts[n].entries.some((e) => e.dir === 'rejoin' && e.peer === t.party && e.inc === t.inc)).sort();
  const crashed = t.crashed.map(describe).join('; ');
  if (peers.length) return `${t.party} was restarted ${t.crashed.length} time(s) and rejoined as incarnation ${t.inc} (rejoin recorded by ${peers.join(', ')}); crashed incarnations verified: ${crashed}`;
  return `${t.party} was started again as incarnation ${t.inc} but never rejoined the run (no peer recorded its rejoin); crashed incarnations verified: ${crashed}`;
}
