export function JobsPage(_props: { status?: string; workspace?: string }) {
  return <h1>JobsPage</h1>;
}
