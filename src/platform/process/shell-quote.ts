/** One word for a POSIX shell: single-quoted, so nothing in it is read as syntax (a `'` inside ends, escapes and reopens). */
export function singleQuoted(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
