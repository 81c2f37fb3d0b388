import type { QueueApi } from '@workq/sdk';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { createApi, describeError, session } from './api.ts';
import { LiveContext, LiveFeed, useLive } from './live.ts';
import { JobPage } from './pages/job.tsx';
import { JobsPage } from './pages/jobs.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { SchedulesPage } from './pages/schedules.tsx';
import { SchemasPage } from './pages/schemas.tsx';
import { WorkersPage } from './pages/workers.tsx';
import { Link, useRoute } from './router.tsx';
import { ApiContext } from './use-api.ts';

type Access = { state: 'checking' } | { state: 'signed-out'; error?: string } | { state: 'in'; api: QueueApi };

/** Whether `token` may administer this server: `admin.stats` answers only for the `admin` scope. */
async function tryToken(token: string): Promise<Access> {
  const api = createApi(token);
  try {
    await api.admin.stats.query();
    return { state: 'in', api };
  } catch (error) {
    const { code, message, outage } = describeError(error);
    const said =
      code === 'UNAUTHORIZED' || code === 'FORBIDDEN' || outage ? message : `The server answered: ${message}`;
    return { state: 'signed-out', error: said };
  }
}

/** The dashboard: a sign-in form until a token with the `admin` scope is given, then the pages. */
export function App() {
  const [access, setAccess] = useState<Access>({ state: 'checking' });
  useEffect(() => {
    // Only a token this tab signed in with is tried: a refused probe would log an error in the console.
    const token = session.token();
    if (token === null) setAccess({ state: 'signed-out' });
    else void tryToken(token).then(setAccess);
  }, []);
  if (access.state === 'checking') return <p class="center muted">Connecting…</p>;
  if (access.state === 'signed-out') {
    return (
      <SignIn
        error={access.error}
        onToken={async (token) => {
          const next = await tryToken(token);
          if (next.state === 'in') session.signIn(token);
          setAccess(next);
        }}
      />
    );
  }
  return (
    <SignedIn
      api={access.api}
      onSignOut={() => {
        session.signOut();
        setAccess({ state: 'signed-out' });
      }}
    />
  );
}

function SignIn(props: { error: string | undefined; onToken: (token: string) => Promise<void> }) {
  const [busy, setBusy] = useState(false);
  return (
    <main class="sign-in">
      <form
        class="card"
        onSubmit={async (event) => {
          event.preventDefault();
          const token = String(new FormData(event.currentTarget).get('token') ?? '').trim();
          setBusy(true);
          await props.onToken(token);
          setBusy(false);
        }}
      >
        <h1>workq</h1>
        <p class="muted">
          A token with the <code>admin</code> scope (none for a server without tokens). It is kept in this tab only.
        </p>
        <label for="token">Token</label>
        <input id="token" name="token" type="password" autocomplete="off" />
        {props.error && (
          <p class="error" role="alert">
            {props.error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

const NAV = [
  ['/', 'Overview'],
  ['/jobs', 'Jobs'],
  ['/schemas', 'Schemas'],
  ['/workers', 'Workers'],
  ['/schedules', 'Schedules'],
] as const;

function SignedIn(props: { api: QueueApi; onSignOut: () => void }) {
  const live = useMemo(() => new LiveFeed(props.api), [props.api]);
  useEffect(() => () => live.close(), [live]);
  return (
    <ApiContext.Provider value={props.api}>
      <LiveContext.Provider value={live}>
        <Shell onSignOut={props.onSignOut} />
      </LiveContext.Provider>
    </ApiContext.Provider>
  );
}

function Shell(props: { onSignOut: () => void }) {
  const route = useRoute();
  const live = useLive();
  const section = `/${route.path.split('/')[1] ?? ''}`;
  return (
    <>
      <header class="top">
        <Link to="/" class="brand">
          workq
        </Link>
        <nav class="top-nav" aria-label="Sections">
          {NAV.map(([to, label]) => (
            <Link key={to} to={to} class={section === to ? 'active' : undefined} current={section === to}>
              {label}
            </Link>
          ))}
        </nav>
        <span class={`live ${live.connected ? 'on' : 'off'}`} title={live.connected ? 'Live events' : 'Polling'}>
          {live.connected ? 'live' : 'polling'}
        </span>
        <button type="button" class="link" onClick={props.onSignOut}>
          Sign out
        </button>
      </header>
      <main class="page">
        <Page path={route.path} query={route.query} />
      </main>
    </>
  );
}

/** Each page's title, so tabs, history and screen readers tell pages apart. */
function titleOf(parts: readonly string[]): string {
  switch (parts[0]) {
    case undefined:
      return 'Overview';
    case 'jobs':
      return parts[1] ? `Job …${parts[1].slice(-12)}` : 'Jobs';
    case 'schemas':
      return parts[1] ? `Schemas of ${parts[1]}` : 'Schemas';
    case 'workers':
      return 'Workers';
    case 'schedules':
      return 'Schedules';
    default:
      return 'Not found';
  }
}

function Page(props: { path: string; query: URLSearchParams }) {
  const parts = props.path.split('/').filter(Boolean).map(decodeURIComponent);
  const title = `${titleOf(parts)} · workq`;
  useEffect(() => {
    document.title = title;
  }, [title]);
  switch (parts[0]) {
    case undefined:
      return <OverviewPage />;
    case 'jobs':
      return parts[1] ? <JobPage id={parts[1]} /> : <JobsPage query={props.query} />;
    case 'schemas':
      return <SchemasPage name={parts[1]} query={props.query} />;
    case 'workers':
      return <WorkersPage />;
    case 'schedules':
      return <SchedulesPage />;
    default:
      return (
        <p class="muted">
          No page here. <Link to="/">Back to the overview</Link>.
        </p>
      );
  }
}
