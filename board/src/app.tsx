import { AsksBand } from './components/asks-band.js';
import { useNotifications } from './notify.js';
import { JobPage } from './pages/job.js';
import { JobsPage } from './pages/jobs.js';
import { NewJobPage } from './pages/new-job.js';
import { NodesPage } from './pages/nodes.js';
import { RosterPage } from './pages/roster.js';
import { RunnersPage } from './pages/runners.js';
import { StatsPage } from './pages/stats.js';
import { href, useRoute, type Route } from './router.js';

const NAV: { label: string; route: Route }[] = [
  { label: 'Jobs', route: { page: 'jobs' } },
  { label: 'New job', route: { page: 'new' } },
  { label: 'Stats', route: { page: 'stats' } },
  { label: 'Runners', route: { page: 'runners' } },
  { label: 'Roster', route: { page: 'roster' } },
  { label: 'Nodes', route: { page: 'nodes' } },
];

export function App() {
  const route = useRoute();
  const notifications = useNotifications();
  const current = route.page === 'job' ? 'jobs' : route.page;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href({ page: 'jobs' })}>
          gaffer
        </a>
        <nav aria-label="Pages">
          <ul>
            {NAV.map((n) => (
              <li key={n.label}>
                <a href={href(n.route)} aria-current={n.route.page === current ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {notifications.supported && (
          <button
            type="button"
            class="quiet"
            aria-pressed={notifications.on}
            onClick={() => void notifications.toggle()}
          >
            {notifications.on ? 'Notifications on' : 'Notify me'}
          </button>
        )}
      </header>
      <AsksBand />
      <main id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </>
  );
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case 'jobs':
      return <JobsPage status={route.status} workspace={route.workspace} />;
    case 'job':
      return <JobPage id={route.id} />;
    case 'new':
      return <NewJobPage />;
    case 'stats':
      return <StatsPage />;
    case 'runners':
      return <RunnersPage />;
    case 'roster':
      return <RosterPage />;
    case 'nodes':
      return <NodesPage />;
  }
}
