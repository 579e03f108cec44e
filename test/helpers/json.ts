/*
 * Reading what a server answered in tests. The parsed JSON is `any` on purpose: tests probe wire
 * answers freely (`json.state.result.workers[0].name`), and the answer's shape is checked where it
 * matters, by each door against the one schema (src/interfaces/answer-check.ts).
 */

/** `text` parsed as JSON, or undefined when it is not JSON (an HTML page, an empty body). */
export function jsonOrUndefined(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A response's body as text, and as JSON when it is JSON. */
export async function readBody(res: Response): Promise<{ text: string; json: any }> {
  const text = await res.text();
  return { text, json: jsonOrUndefined(text) };
}
