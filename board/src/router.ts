import { useEffect, useState } from 'preact/hooks';

/** The board's pages, addressed by the URL's hash so the server serves one file for all of them. */
export type Route =
  | { page: 'jobs'; status?: string; workspace?: string }
  | { page: 'job'; id: string }
  | { page: 'new' }
  | { page: 'stats' }
  | { page: 'runners' }
  | { page: 'roster' }
  | { page: 'nodes' };

export function parseRoute(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const q = new URLSearchParams(query);
  if (parts[0] === 'jobs' && parts[1]) return { page: 'job', id: parts[1] };
  if (parts[0] === 'new') return { page: 'new' };
  if (parts[0] === 'stats') return { page: 'stats' };
  if (parts[0] === 'runners') return { page: 'runners' };
  if (parts[0] === 'roster') return { page: 'roster' };
  if (parts[0] === 'nodes') return { page: 'nodes' };
  return {
    page: 'jobs',
    ...(q.get('status') ? { status: q.get('status') as string } : {}),
    ...(q.get('workspace') ? { workspace: q.get('workspace') as string } : {}),
  };
}

export function href(route: Route): string {
  switch (route.page) {
    case 'job':
      return `#/jobs/${encodeURIComponent(route.id)}`;
    case 'jobs': {
      const q = new URLSearchParams();
      if (route.status) q.set('status', route.status);
      if (route.workspace) q.set('workspace', route.workspace);
      const s = q.toString();
      return `#/jobs${s ? `?${s}` : ''}`;
    }
    default:
      return `#/${route.page}`;
  }
}

export function navigate(route: Route): void {
  location.hash = href(route);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}
