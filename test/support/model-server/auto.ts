// Answers for side requests (opencode's title request, gemini's model classifier): text, or JSON shaped by the asked schema.
import { isRecord } from './text.js';
import type { ModelRequest } from './types.js';

/** The text a side request gets: JSON built from its schema when it wants JSON, else `fallback`. */
export function autoText(request: ModelRequest, fallback: string): string {
  if (!request.wantsJson) return fallback;
  return JSON.stringify(sampleFromSchema(request.jsonSchema) ?? {});
}

/** A minimal value that satisfies a JSON schema (or gemini's upper-case Schema): first enum value, empty arrays, zeroes. */
export function sampleFromSchema(schema: unknown, depth = 0): unknown {
  if (!isRecord(schema) || depth > 10) return null;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const options: unknown = schema[key];
    if (Array.isArray(options) && options.length > 0) return sampleFromSchema(options[0], depth + 1);
  }
  if ('default' in schema) return schema.default;
  const declared: unknown = Array.isArray(schema.type) ? schema.type.find((t: unknown) => t !== 'null') : schema.type;
  const type = String(declared ?? (isRecord(schema.properties) ? 'object' : '')).toLowerCase();
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(isRecord(schema.properties) ? schema.properties : {}))
        out[key] = sampleFromSchema(value, depth + 1);
      return out;
    }
    case 'array': {
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
      return Array.from({ length: min }, () => sampleFromSchema(schema.items, depth + 1));
    }
    case 'string':
      return 'scripted';
    case 'number':
    case 'integer':
      return typeof schema.minimum === 'number' ? schema.minimum : 0;
    case 'boolean':
      return false;
    default:
      return null;
  }
}
