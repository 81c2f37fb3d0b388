import type { QueueApi } from '@workq/sdk';
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

export const ApiContext = createContext<QueueApi | null>(null);

/** The signed-in client. */
export function useApi(): QueueApi {
  const api = useContext(ApiContext);
  if (!api) throw new Error('useApi outside the signed-in dashboard');
  return api;
}
