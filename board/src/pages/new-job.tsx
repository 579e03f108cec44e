export function NewJobPage() {
  return <h1>NewJobPage</h1>;
}
