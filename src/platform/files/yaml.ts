import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

const require = createRequire(import.meta.url);

/** The yaml package, loaded on first use: most processes never read YAML, and it costs ~9 MB. */
export function yaml(): typeof Yaml {
  return require('yaml') as typeof Yaml;
}
