import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api } from './api.ts';

export const ApiContext = createContext<Api | null>(null);

/** The signed-in client. */
export function useApi(): Api {
  const api = useContext(ApiContext);
  if (!api) throw new Error('useApi outside the signed-in dashboard');
  return api;
}
