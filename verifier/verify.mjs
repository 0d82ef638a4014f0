#!/usr/bin/env node
// Second, independent verifier of sdp run directories, written from docs/spec (spec version 1).
// Usage: node verifier/verify.mjs RUN_DIR [--trust TRUST.json] [--json] [--allow-unchecked]
// Prints one line per check ("PASS V-n name: detail" / "FAIL ..."). Exit status: 0 verified
// (every check ran and passed), 1 a check failed, 2 usage or unreadable input, 3 every check
// that ran passed but some could not be run ("not checked"; 0 with --allow-unchecked).
import fs from 'node:fs';
import path from 'node:path';
import { runChecks } from './lib/run.mjs';

const USAGE = `usage: node verify.mjs RUN_DIR [--trust TRUST.json] [--json] [--allow-unchecked]

Checks an sdp run directory against docs/spec (the numbered checks V-1 .. V-30).
  --trust FILE       the trust anchor (RUN_DIR.trust.json): session, cluster digest, key fingerprints
  --json             one JSON report on stdout
  --allow-unchecked  exit 0 although some checks could not be run (they are still listed)
  --help             this text
exit status: 0 verified, 1 a check failed, 2 usage or unreadable input,
             3 no check failed but some were not checked (see "not checked" lines)`;

function main(argv) {
  const args = argv.slice(2);
  let trustPath = null, json = false, allowUnchecked = false;
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--help' || args[i] === '-h') { console.log(USAGE); return 0; }
    if (args[i] === '--trust') trustPath = args[++i];
    else if (args[i] === '--json') json = true;
    else if (args[i] === '--allow-unchecked') allowUnchecked = true;
    else if (args[i].startsWith('--')) { console.error(`verify: unknown option ${args[i]}\n${USAGE}`); return 2; }
    else pos.push(args[i]);
  }
  if (pos.length !== 1 || (trustPath === undefined)) {
    console.error(USAGE);
    return 2;
  }
  const runDir = pos[0];
  if (!fs.existsSync(runDir) || !fs.statSync(runDir).isDirectory()) { console.error(`verify: ${runDir} is not a directory`); return 2; }
  let trust = null;
  if (trustPath) {
    let p = trustPath;
    if (fs.existsSync(p) && fs.statSync(p).isDirectory()) p = path.join(p, 'trust.json');
    try { trust = JSON.parse(fs.readFileSync(p, 'utf8')); } catch (e) { console.error(`verify: trust file ${p} unreadable: ${e.message}`); return 2; }
    if (!trust || typeof trust !== 'object' || typeof trust.fingerprints !== 'object') { console.error(`verify: trust file ${p}: expected {session, cluster_sha256, fingerprints}`); return 2; }
  }
  const report = runChecks(runDir, trust);
  const ok = report.checks.length > 0 && report.checks.every((c) => c.ok);
  const first = report.checks.find((c) => !c.ok);
  const unchecked = ok && report.notChecked.length > 0;
  const verdict = !ok ? `FAILED: ${first ? `${first.id} ${first.name}: ${first.detail}` : 'no checks ran'}`
    : unchecked ? `passed, but ${report.notChecked.length} check(s) not checked${allowUnchecked ? ' (allowed by --allow-unchecked)' : ': NOT verified (exit 3; --allow-unchecked accepts)'}` : 'verified';
  if (json) {
    console.log(JSON.stringify({ ok, verified: ok && !unchecked, unchecked: report.notChecked.length, first_failure: first ? `${first.id} ${first.name}: ${first.detail}` : '', checks: report.checks, warnings: report.warnings, not_checked: report.notChecked }, null, 1));
  } else {
    for (const c of report.checks) console.log(`${c.ok ? 'PASS' : 'FAIL'} ${c.id} ${c.name}: ${c.detail}`);
    for (const w of report.warnings) console.log(`warning: ${w}`);
    for (const w of report.notChecked) console.log(`not checked: ${w}`);
    console.log(verdict);
  }
  return !ok ? 1 : unchecked && !allowUnchecked ? 3 : 0;
}

process.exitCode = main(process.argv);
