import { readFileSync } from 'node:fs';

/** A small file's text (utf8), or null when it cannot be read (gone, a folder, no permission). */
export function readTextOrNull(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}
