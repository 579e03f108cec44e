export function StatsPage() {
  return <h1>StatsPage</h1>;
}
