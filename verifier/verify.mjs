#!/usr/bin/env node
// Second, independent verifier of sdp run directories, written from docs/spec (spec version 1).
// Usage: node verifier/verify.mjs RUN_DIR [--trust TRUST.json] [--json]
// Prints one line per check ("PASS V-n name: detail" / "FAIL ..."); exit 0 iff all pass.
import fs from 'node:fs';
import path from 'node:path';
import { runChecks } from './lib/run.mjs';

function main(argv) {
  const args = argv.slice(2);
  let trustPath = null, json = false;
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--trust') trustPath = args[++i];
    else if (args[i] === '--json') json = true;
    else pos.push(args[i]);
  }
  if (pos.length !== 1 || (trustPath === undefined)) {
    console.error('usage: node verify.mjs RUN_DIR [--trust TRUST.json] [--json]');
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
  if (json) {
    console.log(JSON.stringify({ ok, first_failure: first ? `${first.id} ${first.name}: ${first.detail}` : '', checks: report.checks, warnings: report.warnings, not_checked: report.notChecked }, null, 1));
  } else {
    for (const c of report.checks) console.log(`${c.ok ? 'PASS' : 'FAIL'} ${c.id} ${c.name}: ${c.detail}`);
    for (const w of report.warnings) console.log(`warning: ${w}`);
    for (const w of report.notChecked) console.log(`not checked: ${w}`);
    console.log(ok ? 'verified' : `FAILED: ${first ? `${first.id} ${first.name}: ${first.detail}` : 'no checks ran'}`);
  }
  return ok ? 0 : 1;
}

process.exitCode = main(process.argv);
