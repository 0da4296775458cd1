#!/usr/bin/env node
// Generates src/openapi.ts — a TypeScript declaration for every schema under
// components.schemas of the repository's openapi.yaml — so the SDK's wire types cannot drift
// from the API description. `node scripts/gen-types.mjs` writes the file; `--check` exits 1
// when the committed file is not what the generator makes now (the test suite runs the same
// check). A few schemas document per-entry fields by description only (the server checks
// them per entry, so the schema may not enforce them); their TypeScript types are given in
// OVERRIDES, and the generator fails when a type-less property has no override or an
// override names a property the schema does not have.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
export const specPath = join(here, '..', '..', '..', 'openapi.yaml');
export const outPath = join(here, '..', 'src', 'openapi.ts');

// Schema path (Name.prop, with [] for array items) → [TypeScript type, required].
const OVERRIDES = {
  'SendMessageEntry.body': ['string', true],
  'SendMessageEntry.attributes': ['Record<string, string> | null', false],
  'SendMessageEntry.delaySeconds': ['number', false],
  'SendMessageEntry.groupId': ['string', false],
  'SendMessageEntry.dedupId': ['string', false],
  'SendMessageEntry.traceparent': ['string', false],
  'SendMessageEntry.deliverAt': ['string', false],
  'SendMessageEntry.key': ['string', false],
  'SendMessageEntry.merge': ["'replace' | 'patch'", false],
  'SendMessageEntry.barrier': ['boolean', false],
  'SendMessageEntry.endGroup': ['boolean', false],
  'SendMessageEntry.priority': ['number', false],
  'PublishMessageEntry.attributes': ['Record<string, string> | null', false],
  'PublishMessageEntry.groupId': ['string', false],
  'PublishMessageEntry.dedupId': ['string', false],
  'PublishMessageEntry.key': ['string', false],
  'PublishMessageEntry.merge': ["'replace' | 'patch'", false],
  'AckBatch.receiptHandles[]': ['string', true],
  'VisibilityBatch.entries[].receiptHandle': ['string', true],
  'VisibilityBatch.entries[].visibilityTimeoutSeconds': ['number', true],
  'DeadLetterBatch.entries[].receiptHandle': ['string', true],
  'DeadLetterBatch.entries[].reason': ['string', false],
};

function lit(v) {
  return JSON.stringify(v);
}

function ident(name) {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

function doc(s, pad) {
  if (!s) return '';
  const lines = String(s).trim().replace(/\*\//g, '*\\/').split('\n');
  if (lines.length === 1) return `${pad}/** ${lines[0]} */\n`;
  return `${pad}/**\n${lines.map((l) => `${pad} * ${l}`.trimEnd()).join('\n')}\n${pad} */\n`;
}

const scalar = { string: 'string', integer: 'number', number: 'number', boolean: 'boolean', null: 'null' };

class Gen {
  constructor(schemas) {
    this.schemas = schemas;
    this.used = new Set();
  }

  // type returns the TypeScript type of schema s found at path p.
  type(s, p, pad) {
    if (s.$ref) {
      const name = s.$ref.replace('#/components/schemas/', '');
      if (!(name in this.schemas)) throw new Error(`${p}: unknown $ref ${s.$ref}`);
      return name;
    }
    if ('const' in s) return lit(s.const);
    if (s.enum) return s.enum.map(lit).join(' | ');
    for (const k of ['oneOf', 'anyOf']) {
      if (!s[k]) continue;
      const parts = s[k].filter((m) => m.$ref || m.type || m.enum || 'const' in m || m.properties);
      if (parts.length > 0) return parts.map((m, i) => this.type(m, `${p}|${i}`, pad)).join(' | ');
    }
    if (s.allOf) return s.allOf.map((m, i) => this.type(m, `${p}&${i}`, pad)).join(' & ');
    const t = Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ['object'] : [];
    if (t.length === 0) {
      if (p in OVERRIDES) {
        this.used.add(p);
        return OVERRIDES[p][0];
      }
      throw new Error(`${p}: a schema without a type; add it to OVERRIDES`);
    }
    return t
      .map((one) => {
        if (one === 'object') return this.object(s, p, pad);
        if (one === 'array') return `${this.wrap(this.type(s.items ?? {}, `${p}[]`, pad))}[]`;
        if (one in scalar) return scalar[one];
        throw new Error(`${p}: unsupported type ${one}`);
      })
      .join(' | ');
  }

  wrap(t) {
    return /[|&]/.test(t) && !t.startsWith('{') ? `(${t})` : t;
  }

  object(s, p, pad) {
    const props = s.properties ?? {};
    const required = new Set(s.required ?? []);
    const inner = pad + '  ';
    let out = '{\n';
    for (const [name, ps] of Object.entries(props)) {
      const pp = `${p}.${name}`;
      let req = required.has(name);
      if (pp in OVERRIDES) req = OVERRIDES[pp][1];
      out += doc(ps.description, inner);
      out += `${inner}${ident(name)}${req ? '' : '?'}: ${this.type(ps, pp, inner)};\n`;
    }
    const ap = s.additionalProperties;
    if (ap && typeof ap === 'object') {
      out += `${inner}[key: string]: ${this.type(ap, `${p}{}`, inner)};\n`;
    } else if (ap === true || (ap === undefined && Object.keys(props).length === 0)) {
      out += `${inner}[key: string]: unknown;\n`;
    }
    return out + `${pad}}`;
  }
}

export function generate(specText) {
  const spec = parse(specText);
  const schemas = spec.components.schemas;
  const g = new Gen(schemas);
  let out =
    '// Code generated by scripts/gen-types.mjs from openapi.yaml; DO NOT EDIT.\n' +
    '// Run `npm run gen` after changing openapi.yaml (the tests fail until you do).\n\n';
  for (const [name, s] of Object.entries(schemas)) {
    // The ErrorIs… schemas only narrow Error's code for one response.
    if (name.startsWith('ErrorIs')) continue;
    out += doc(s.description, '');
    const t = g.type(s, name, '');
    out += t.startsWith('{') ? `export interface ${name} ${t}\n\n` : `export type ${name} = ${t};\n\n`;
  }
  for (const k of Object.keys(OVERRIDES)) {
    if (!g.used.has(k) && !overrideOfTyped(k, schemas)) {
      throw new Error(`OVERRIDES names ${k}, which is not a type-less property of openapi.yaml`);
    }
  }
  return out.trimEnd() + '\n';
}

// overrideOfTyped is true for an override that sets only required-ness of a property that
// has a type (none today); it keeps the unused-override check honest.
function overrideOfTyped() {
  return false;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const want = generate(readFileSync(specPath, 'utf8'));
  if (process.argv.includes('--check')) {
    const have = readFileSync(outPath, 'utf8');
    if (have !== want) {
      console.error('src/openapi.ts is out of date with openapi.yaml: run `npm run gen`');
      process.exit(1);
    }
  } else {
    writeFileSync(outPath, want);
  }
}
