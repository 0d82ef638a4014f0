// Spec 03 T-13: a restarted party "rejoined" only where a peer's signed rejoin entry records its
// last incarnation; the incarnation count alone says it was started again.
import test from 'node:test';
import assert from 'node:assert/strict';
import { restartLine } from '../lib/incarnations.mjs';

const crashed = { label: 'mix-1.crashed-0', inc: 0, unsignedTail: 2, entries: [{ dir: 'open' }, { dir: 'recv', peer: 'client-1' }] };
const mix = { party: 'mix-1', inc: 1, crashed: [crashed], entries: [] };

test('T-13 rejoined only from a signed rejoin entry of the last incarnation', () => {
  const peer = (inc) => ({ party: 'mix-2', entries: [{ dir: 'rejoin', peer: 'mix-1', inc }] });
  const yes = restartLine(mix, { 'mix-1': mix, 'mix-2': peer(1), 'mix-0': peer(1) });
  assert.equal(yes, 'mix-1 was restarted 1 time(s) and rejoined as incarnation 1 (rejoin recorded by mix-0, mix-2); crashed incarnations verified: '
    + 'mix-1.crashed-0.jsonl (incarnation 0): 2 signed entries, received 1 message(s) from client-1, sent no protocol message; its last 2 entries were cut by the crash (unsigned, ignored)');
  for (const others of [{}, { 'mix-2': peer(0) }, { 'mix-2': { entries: [{ dir: 'rejoin', peer: 'mix-3', inc: 1 }] } }]) {
    const no = restartLine(mix, { 'mix-1': mix, ...others });
    assert.match(no, /^mix-1 was started again as incarnation 1 but never rejoined the run \(no peer recorded its rejoin\); crashed incarnations verified: mix-1\.crashed-0\.jsonl/);
  }
});
