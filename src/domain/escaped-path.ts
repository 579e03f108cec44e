// issue 32: a file name that is not UTF-8 is listed and audited like any other, under a name gaffer
// can carry in JSON — git's own C-style quoting (what `git status` shows with core.quotePath):
// the whole path in double quotes, `\"`, `\\`, the usual control escapes, and every other byte
// outside printable ASCII as three octal digits: `"src/caf\351.txt"`. Only names that are not
// valid UTF-8 are quoted; such a name can never match a task's `files` entry.

const SHORT: Record<number, string> = {
  7: '\\a',
  8: '\\b',
  9: '\\t',
  10: '\\n',
  11: '\\v',
  12: '\\f',
  13: '\\r',
  34: '\\"',
  92: '\\\\',
};

/** The C-quoted form of a path's raw bytes. */
export function quotePathBytes(raw: Buffer): string {
  let out = '"';
  for (const byte of raw) {
    const short = SHORT[byte];
    if (short !== undefined) out += short;
    else if (byte < 0x20 || byte >= 0x7f) out += `\\${byte.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(byte);
  }
  return `${out}"`;
}

/** A path's bytes as gaffer names it: the text when they are valid UTF-8, else quoted (quotePathBytes). */
export function nameOfPathBytes(raw: Buffer): string {
  const text = raw.toString('utf8');
  // U+FFFD stands for bytes that are not UTF-8 — or is in the name itself
  if (!text.includes('\uFFFD') || Buffer.from(text, 'utf8').equals(raw)) return text;
  return quotePathBytes(raw);
}

/** The raw bytes of a quoted name (quotePathBytes' inverse). */
export function unquotePathBytes(quoted: string): Buffer {
  const bytes: number[] = [];
  const short = new Map(Object.entries(SHORT).map(([b, e]) => [e, Number(b)]));
  for (let i = 1; i < quoted.length - 1; i++) {
    const c = quoted[i] as string;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const octal = /^[0-7]{3}/.exec(quoted.slice(i + 1));
    if (octal) {
      bytes.push(parseInt(octal[0], 8));
      i += 3;
    } else {
      bytes.push(short.get(`\\${quoted[i + 1] ?? ''}`) ?? quoted.charCodeAt(i + 1) & 0xff);
      i += 1;
    }
  }
  return Buffer.from(bytes);
}

/** Whether a path is a quoted name (quotePathBytes): one that is not UTF-8 on disk. */
export function isQuotedPath(p: string): boolean {
  return p.length >= 2 && p.startsWith('"') && p.endsWith('"') && p.includes('\\');
}
