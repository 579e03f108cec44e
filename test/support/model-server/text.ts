// Small helpers shared by the API adapters: reading text out of content shapes, splitting text into stream chunks, token estimates.

/** Text of a content value: a string, or the `text` of every part in an array (or of one object). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map(textOf)
      .filter((part) => part !== '')
      .join('');
  if (isRecord(content) && typeof content.text === 'string') return content.text;
  return '';
}

/** A plain JSON object (not an array, not null). */
export function isRecord(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Splits text into up to `max` pieces on word boundaries, so clients must stitch deltas together. */
export function splitChunks(text: string, max = 4): string[] {
  if (text.length <= 1) return [text];
  const words = text.match(/\S+\s*|\s+/g) ?? [text];
  const per = Math.max(1, Math.ceil(words.length / max));
  const chunks: string[] = [];
  for (let i = 0; i < words.length; i += per) chunks.push(words.slice(i, i + per).join(''));
  if (chunks.length > 1) return chunks;
  // one long word: cut it in the middle so arguments JSON always arrives in pieces
  const mid = Math.ceil(text.length / 2);
  return [text.slice(0, mid), text.slice(mid)];
}

/** A plausible token count for a text: about four characters a token, at least one. */
export function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}
