import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, extname } from 'node:path';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';

type Table = Record<string, unknown>;

/**
 * Writes the settings gaffer needs into a CLI's settings file, keeping everything the user already
 * has there (an agent CLI's home is merged, never overwritten: a gemini home lost its
 * `security.auth.selectedType` once). JSON and TOML are merged key by key, gaffer's keys winning;
 * a file gaffer cannot read is left untouched and the run is refused with the reason (a throw the
 * runner reports as "cannot prepare its state"). The file is replaced atomically and only when
 * the merge changes it.
 */
export function writeMergedSettings(path: string, content: string): void {
  const format = formatOf(path);
  const existing = existsSync(path) ? readFileSync(path, 'utf8') : null;
  let next = content;
  if (existing !== null && existing.trim() !== '') {
    if (format === null) {
      if (existing === content) return;
      throw new Error(
        `${path} exists and gaffer cannot merge its format: it is left as it is; remove it or give the CLI its own home`,
      );
    }
    const mine = readTable(content, format, "gaffer's settings");
    const theirs = readTable(existing, format, path);
    next =
      format === 'json'
        ? `${JSON.stringify(mergeTables(theirs, mine), null, 2)}\n`
        : `${stringifyToml(mergeTables(theirs, mine))}\n`;
    if (next === existing) return;
  }
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.gaffer-${process.pid}.tmp`;
  writeFileSync(tmp, next);
  renameSync(tmp, path);
}

/** `base` with `over` laid on it: tables merge key by key, anything else from `over` replaces. */
export function mergeTables(base: Table, over: Table): Table {
  const out: Table = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prior = out[key];
    out[key] = isTable(prior) && isTable(value) ? mergeTables(prior, value) : value;
  }
  return out;
}

function formatOf(path: string): 'json' | 'toml' | null {
  const ext = extname(path).toLowerCase();
  return ext === '.json' ? 'json' : ext === '.toml' ? 'toml' : null;
}

function readTable(text: string, format: 'json' | 'toml', what: string): Table {
  let parsed: unknown;
  try {
    parsed = format === 'json' ? JSON.parse(text) : parseToml(text);
  } catch (err) {
    throw new Error(
      `${what} is not valid ${format.toUpperCase()} (${err instanceof Error ? err.message : String(err)}): gaffer merges its settings into it and will not overwrite it; fix or remove it`,
    );
  }
  if (!isTable(parsed))
    throw new Error(
      `${what} does not hold a ${format.toUpperCase()} object: gaffer merges its settings into it and will not overwrite it`,
    );
  return parsed;
}

function isTable(value: unknown): value is Table {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
