import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The package's root is three folders up from this file both in src/ and in dist/, in a checkout
// and in an installed package alike.
const root = new URL('../../../', import.meta.url);

/** The installed package's version, from its own package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string }).version;
}

/** A file the package ships (`examples/demo.mjs`), as a path. */
export function packageFile(relative: string): string {
  return fileURLToPath(new URL(relative, root));
}
