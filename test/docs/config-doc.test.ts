import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { configFileSchema } from '../../src/config/config-schema.js';
import { rosterSchema } from '../../src/domain/roster.js';
import { jobRequestSchema } from '../../src/domain/request.js';

// Every key the config file takes is in docs/config.md, and every field of a job request and its
// tasks is in docs/request.md: each as a dotted path in backticks. The paths come from the zod
// schemas themselves, so a key added to a schema fails here until it is documented.
const root = resolve(import.meta.dirname, '../..');
const read = (page: string) => readFileSync(join(root, 'docs', page), 'utf8');

type Schema = z.core.$ZodType;

/** Wrappers that change how a value is read, not where it sits. */
const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'nonoptional', 'readonly', 'catch']);

/**
 * The dotted paths of a schema's leaves: objects by their keys, a record's values under `<key>`,
 * an array's items under `[]`, a union's object members merged (and the path itself when a member
 * is not an object). `substitutes` gives the schema of a path the outer schema leaves open.
 */
function keyPaths(schema: Schema, at: string, substitutes: Readonly<Record<string, Schema>> = {}): string[] {
  const substitute = substitutes[at];
  if (substitute !== undefined && substitute !== schema) return keyPaths(substitute, at, substitutes);
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  const child = (name: string) => (at === '' ? name : `${at}.${name}`);
  if (WRAPPERS.has(def.type)) return keyPaths(def.innerType as Schema, at, substitutes);
  switch (def.type) {
    case 'pipe': {
      // z.preprocess(fn, s) is a pipe from a transform into s; s.transform(fn) is a pipe from s into one
      const from = def.in as Schema;
      return keyPaths(from._zod.def.type === 'transform' ? (def.out as Schema) : from, at, substitutes);
    }
    case 'object':
      return Object.entries(def.shape as Record<string, Schema>).flatMap(([name, value]) =>
        keyPaths(value, child(name), substitutes),
      );
    case 'record':
      return below(keyPaths(def.valueType as Schema, child('<key>'), substitutes), at, child('<key>'));
    case 'array':
      return below(keyPaths(def.element as Schema, `${at}[]`, substitutes), at, `${at}[]`);
    case 'union': {
      const paths = (def.options as Schema[]).flatMap((option) => keyPaths(option, at, substitutes));
      return [...new Set(paths)];
    }
    default:
      return [at];
  }
}

/** A container's paths: the container itself when its items are leaves, else the items' paths. */
function below(paths: string[], at: string, item: string): string[] {
  return [...new Set(paths.map((p) => (p === item ? at : p)))];
}

/**
 * Whether a documented path names a schema path: the same segments, where a documented `<name>`
 * stands for any key (`runners.<cli>.home` covers `runners.claude.home`) and a record's `<key>` is
 * documented only by a placeholder.
 */
function covers(documented: string, path: string): boolean {
  const doc = documented.split('.');
  const want = path.split('.');
  if (doc.length !== want.length) return false;
  // a placeholder stands for one key below the top, never for an array's items
  return want.every((segment, i) =>
    i > 0 && /^<[^>]+>$/.test(doc[i] ?? '') ? !segment.endsWith('[]') : doc[i] === segment,
  );
}

/** Every path-like token inside a page's code spans (a fenced block's YAML is an example, not a key's entry). */
function codePaths(text: string): string[] {
  const spans = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').match(/`[^`\n]+`/g) ?? [];
  return spans.flatMap((span) => span.match(/[\w<>[\]]+(?:\.[\w<>[\]]+)*/g) ?? []);
}

/** The paths a page's tables give in their first column. */
function tableKeys(text: string): string[] {
  return [...text.matchAll(/^\|\s*`([^`]+)`/gm)].map((m) => m[1] ?? '');
}

const configPaths = keyPaths(configFileSchema, '', { roster: rosterSchema });
const requestPaths = keyPaths(jobRequestSchema, '');

describe('the schemas walked', () => {
  it('finds the nested keys of the config, the roster and the request', () => {
    expect(configPaths).toEqual(
      expect.arrayContaining([
        'workers.max_parallel',
        'runners.claude.home',
        'models.<key>.url',
        'tokens',
        'budgets[].provider',
        'roster.entries[].id',
        'env.pass',
      ]),
    );
    expect(requestPaths).toEqual(
      expect.arrayContaining([
        'workspace',
        'tasks[].instruction',
        'tasks[].gates',
        'tasks[].gates[].paths',
        'verify',
        'verify.known_failures',
        'repo.url',
      ]),
    );
  });

  it('matches a placeholder for any key, and a record key only with a placeholder', () => {
    expect(covers('runners.<name>.enabled', 'runners.shell.enabled')).toBe(true);
    expect(covers('models.<name>.url', 'models.<key>.url')).toBe(true);
    expect(covers('models.default.url', 'models.<key>.url')).toBe(false);
    expect(covers('runners.<name>', 'runners.shell.enabled')).toBe(false);
    expect(covers('<keys>', 'sandbox')).toBe(false);
  });
});

for (const { page, paths } of [
  { page: 'config.md', paths: configPaths },
  { page: 'request.md', paths: requestPaths },
]) {
  describe(`docs/${page}`, () => {
    const text = read(page);
    const documented = codePaths(text);

    it('names every key of its schema in backticks', () => {
      const missing = paths.filter((path) => !documented.some((d) => covers(d, path)));
      expect(missing).toEqual([]);
    });

    it('lists in its tables only keys the schema has', () => {
      const unknown = tableKeys(text).filter(
        (key) =>
          /^[\w<>[\]]+(\.[\w<>[\]]+)*$/.test(key) &&
          !paths.some((path) => covers(key, path) || path.startsWith(`${key}.`) || path.startsWith(`${key}[]`)),
      );
      expect(unknown).toEqual([]);
    });
  });
}
