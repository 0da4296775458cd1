#!/usr/bin/env node
// Builds what the tests run against into .bin/: the `queues` server (unless QUEUES_BIN names
// one already built) and the Go side of the interoperability test. Both come from this
// repository, two levels up; Go's build cache makes a rebuild quick.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const repo = join(pkg, '..', '..');
const bin = join(pkg, '.bin');
mkdirSync(bin, { recursive: true });

function build(out, target) {
  const t = Date.now();
  execFileSync('go', ['build', '-o', out, target], { cwd: repo, stdio: 'inherit' });
  console.log(`built ${target} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
}

if (process.env.QUEUES_BIN) {
  if (!existsSync(process.env.QUEUES_BIN)) {
    console.error(`QUEUES_BIN=${process.env.QUEUES_BIN} does not exist`);
    process.exit(1);
  }
} else {
  build(join(bin, 'queues'), './services/queues');
}
build(join(bin, 'gointerop'), './sdk/typescript/test/gointerop');
