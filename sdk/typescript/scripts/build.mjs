#!/usr/bin/env node
// Builds the package into dist/: ES modules (dist/esm) and CommonJS (dist/cjs, marked so by
// its own package.json, since the package's "type" is "module"), each with declarations.
// The exports map of package.json points import and require at them.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(pkg, 'node_modules', 'typescript', 'bin', 'tsc');
rmSync(join(pkg, 'dist'), { recursive: true, force: true });
for (const config of ['tsconfig.json', 'tsconfig.cjs.json']) {
  execFileSync(process.execPath, [tsc, '-p', config], { cwd: pkg, stdio: 'inherit' });
}
mkdirSync(join(pkg, 'dist', 'cjs'), { recursive: true });
writeFileSync(join(pkg, 'dist', 'cjs', 'package.json'), '{"type": "commonjs"}\n');
