import { createHash } from 'node:crypto';

/**
 * Each key of a git config file (`core.hookspath`, `remote.origin.url`: section and name
 * lowercased as `git config -l` prints them, subsection kept) with a short hash of its values in
 * order, so two versions of the file can say which keys changed without keeping any value (a
 * config may hold a token).
 */
export function parseGitConfigKeys(text: string): Record<string, string> {
  const values = new Map<string, string[]>();
  forEachEntry(text, (key, value) => {
    const list = values.get(key);
    if (list) list.push(value);
    else values.set(key, [value]);
  });
  const keys: Record<string, string> = {};
  for (const [key, list] of values) keys[key] = createHash('sha1').update(list.join('\0')).digest('hex').slice(0, 16);
  return keys;
}

/** The last value of a key (`core.hookspath`) in a git config file's text; null when it is not set. */
export function readGitConfigValue(text: string, key: string): string | null {
  let found: string | null = null;
  forEachEntry(text, (k, value) => {
    if (k === key) found = value;
  });
  return found;
}

const HEADER = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]/;
const KEY = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$/s;

/** git-config(1) syntax, enough to name keys: sections, quoted subsections, continuations, comments. */
function forEachEntry(text: string, visit: (key: string, value: string) => void): void {
  const lines = text.split(/\r?\n/);
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] as string).trimStart();
    while (line.endsWith('\\') && i + 1 < lines.length) line = line.slice(0, -1) + (lines[++i] as string);
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = HEADER.exec(line);
    if (header) {
      const name = (header[1] as string).toLowerCase();
      section = header[2] === undefined ? name : `${name}.${header[2].replace(/\\(.)/g, '$1')}`;
      line = line.slice(header[0].length).trimStart();
      if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    }
    const entry = KEY.exec(line.trimEnd());
    if (!entry || section === '') continue;
    const value = entry[2] === undefined ? 'true' : unquote(entry[2]);
    visit(`${section}.${(entry[1] as string).toLowerCase()}`, value);
  }
}

/** A value without its quotes, escapes and trailing comment. */
function unquote(raw: string): string {
  let out = '';
  let quoted = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (c === '\\' && i + 1 < raw.length) {
      const next = raw[++i] as string;
      out += next === 'n' ? '\n' : next === 't' ? '\t' : next === 'b' ? '\b' : next;
    } else if (c === '"') quoted = !quoted;
    else if (!quoted && (c === '#' || c === ';')) break;
    else out += c;
  }
  return out.trim();
}
