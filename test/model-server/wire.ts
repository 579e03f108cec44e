// A minimal SSE client for the wire tests: parses a fetch body the way the SSE spec says (CRLF or LF, event/data fields).

/** One parsed server-sent event; `json` is the parsed data when it is JSON. */
export interface SseEvent {
  event: string | undefined;
  data: string;
  json: any;
}

/** Parses an SSE body into events. */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    if (block.trim() === '') continue;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    const joined = data.join('\n');
    let json: unknown;
    try {
      json = JSON.parse(joined);
    } catch {
      json = undefined;
    }
    events.push({ event, data: joined, json });
  }
  return events;
}

/** POSTs JSON and returns the response. */
export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** POSTs JSON and parses the SSE answer, asserting it is one. */
export async function postSse(url: string, body: unknown): Promise<{ response: Response; events: SseEvent[] }> {
  const response = await postJson(url, body);
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('text/event-stream'))
    throw new Error(`expected an event stream, got ${response.status} ${type}: ${await response.text()}`);
  return { response, events: parseSse(await response.text()) };
}

/** The JSON body of a response, untyped for assertions on wire shapes. */
export async function bodyOf(response: Response | Promise<Response>): Promise<any> {
  return (await response).json();
}
