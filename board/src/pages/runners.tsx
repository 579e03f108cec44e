export function RunnersPage() {
  return <h1>RunnersPage</h1>;
}
