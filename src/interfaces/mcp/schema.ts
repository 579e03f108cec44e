import { z } from 'zod';
import { jobRequestSchema } from '../../domain/request.js';

/** The JSON Schema of the job request, from the one zod schema every door validates with. */
export function jobRequestJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(jobRequestSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete schema.$schema;
  return schema;
}
