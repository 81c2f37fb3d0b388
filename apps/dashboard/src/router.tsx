import { useEffect, useState } from 'preact/hooks';

/** The dashboard's own base path: the server serves it under `/ui/`. */
export const BASE = '/ui';

/** A client route: the path after `/ui` and its query. */
export interface Route {
  path: string;
  query: URLSearchParams;
}

function currentRoute(): Route {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return { path: path === '' ? '/' : path, query: new URLSearchParams(location.search) };
}

/** Goes to a route of the dashboard without reloading; `replace` keeps history as it is. */
export function navigate(to: string, replace = false): void {
  const url = `${BASE}${to}`;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** The current route, updated on navigation and on the browser's back and forward. */
export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return route;
}

/** A link inside the dashboard: a real `href` (open in a new tab works), handled without a reload. */
export function Link(props: { to: string; class?: string; current?: boolean; children: preact.ComponentChildren }) {
  return (
    <a
      href={`${BASE}${props.to}`}
      class={props.class}
      aria-current={props.current ? 'page' : undefined}
      onClick={(event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
        event.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}
