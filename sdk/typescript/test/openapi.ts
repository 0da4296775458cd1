// Reads the repository's openapi.yaml for the drift tests.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { pkgRoot } from './server.js';

export const specPath = join(pkgRoot, '..', '..', 'openapi.yaml');

export interface Operation {
  id: string;
  method: string;
  path: string;
  /** The path with every parameter written {}: routes compare on it. */
  shape: string;
  query: string[];
}

export function shape(path: string): string {
  return path.replace(/\{[^}]+\}/g, '{}');
}

interface Param {
  name?: string;
  in?: string;
  $ref?: string;
}

/** Every operation under paths of openapi.yaml. */
let cached: Operation[] | undefined;

export function operations(): Operation[] {
  cached ??= read();
  return cached;
}

function read(): Operation[] {
  const spec = parse(readFileSync(specPath, 'utf8'));
  const params = spec.components?.parameters ?? {};
  const deref = (p: Param): Param => (p.$ref ? params[p.$ref.replace('#/components/parameters/', '')] : p);
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Record<string, { operationId: string; parameters?: Param[] }>>(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const all = [...((item.parameters as unknown as Param[]) ?? []), ...(op.parameters ?? [])].map(deref);
      out.push({
        id: op.operationId,
        method: method.toUpperCase(),
        path,
        shape: shape(path),
        query: all.filter((p) => p.in === 'query').map((p) => p.name!),
      });
    }
  }
  return out;
}
