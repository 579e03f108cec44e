/**
 * Model attestation (spec 04): the model that served a response compared with the one selected.
 *
 * The rule, by the selected name:
 * - An **exact pin** is a name that carries a snapshot date: `-YYYYMMDD`, `-YYYY-MM-DD`, or a
 *   4-digit `-MMDD`/`-YYMM` (`claude-sonnet-4-20250514`, `gpt-4o-2024-08-06`, `gpt-4-0613`,
 *   `qwen3-235b-a22b-2507`). It must be served exactly (case-insensitive).
 * - Anything else is an **alias/channel**, and the served name must be of its family. A name's
 *   family is the name lowercased without: a `-latest` suffix, a snapshot date suffix, a
 *   trailing `-0` minor version (`claude-sonnet-4-0` = `claude-sonnet-4`), and an Ollama-style
 *   `:tag`. The tag is compared apart: when the selected name has a tag other than `latest`
 *   (`qwen3:8b`), the served tag must start with it (`8b`, `8b-q4_K_M`; not `32b`), because
 *   there the tag names the size or quantization.
 * So `claude-sonnet-4-latest` accepts `claude-sonnet-4-20250514`, `gpt-4o` accepts
 * `gpt-4o-2024-08-06`, `qwen3` accepts `qwen3:latest` and `qwen3:8b`; `claude-sonnet-4-latest`
 * does not accept `claude-3-5-haiku-20241022`.
 */

const DATE_SUFFIX = /-(?:\d{8}|\d{4}-\d{2}-\d{2}|\d{4})$/;

/** A model name split into its family and its `:tag` (null when untagged). */
export interface ModelFamily {
  family: string;
  tag: string | null;
}

/** True when `name` pins a snapshot (carries a date suffix). */
export function isPinnedModel(name: string): boolean {
  return DATE_SUFFIX.test(name.trim().toLowerCase().split(':')[0] ?? '');
}

/** The family of a model name (see the rule above). */
export function modelFamily(name: string): ModelFamily {
  const lower = name.trim().toLowerCase();
  const colon = lower.indexOf(':');
  let family = colon === -1 ? lower : lower.slice(0, colon);
  const tag = colon === -1 ? null : lower.slice(colon + 1);
  family = family
    .replace(/-latest$/, '')
    .replace(DATE_SUFFIX, '')
    .replace(/-latest$/, '')
    .replace(/-0$/, '');
  return { family, tag: tag === 'latest' ? null : tag };
}

/** Whether the served model attests the selected one. */
export function isSameModel(selected: string, served: string): boolean {
  const a = selected.trim().toLowerCase();
  const b = served.trim().toLowerCase();
  if (a === b) return true;
  if (isPinnedModel(a)) return false;
  const want = modelFamily(a);
  const got = modelFamily(b);
  if (want.family !== got.family) return false;
  return want.tag === null || (got.tag !== null && got.tag.startsWith(want.tag));
}

/** The error of spec 04 for a substitution. */
export function substitutionError(observed: string): string {
  return `served model differs from selected model: ${observed}`;
}
