import { z } from 'zod';
import { jobRequestSchema, LIMITS } from '../../domain/request.js';

/** The JSON Schema of the job request, from the one zod schema every door validates with. */
export function jobRequestJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(jobRequestSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete schema.$schema;
  // the schema turns a plain-string task into {"instruction"} before validating it, which JSON
  // Schema cannot say: name the string form, so a client that checks arguments lets it through
  const tasks = (schema.properties as Record<string, { items?: unknown }> | undefined)?.tasks;
  if (tasks?.items) {
    tasks.items = {
      anyOf: [{ type: 'string', minLength: LIMITS.instruction.min, maxLength: LIMITS.instruction.max }, tasks.items],
    };
  }
  return schema;
}
