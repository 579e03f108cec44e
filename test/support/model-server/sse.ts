/** One server-sent event; a string `data` is sent verbatim (e.g. `[DONE]`), anything else as JSON. */
export interface Frame {
  event?: string;
  data: unknown;
}

/** Serializes a frame the way the real servers do (`event:` line when named, one `data:` line, blank line). */
export function formatFrame(frame: Frame, eol: '\n' | '\r\n' = '\n'): string {
  const data = typeof frame.data === 'string' ? frame.data : JSON.stringify(frame.data);
  const head = frame.event === undefined ? '' : `event: ${frame.event}${eol}`;
  return `${head}data: ${data}${eol}${eol}`;
}
