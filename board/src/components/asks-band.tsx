export function AsksBand() {
  return null;
}
