export function JobPage(_props: { id: string }) {
  return <h1>JobPage</h1>;
}
