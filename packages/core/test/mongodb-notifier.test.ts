import { describe, expect, it } from 'vitest';
import { storesOnDouble } from './support/mongodb-on-double.ts';
import { until } from './support/wait-for.ts';

const openOnDouble = storesOnDouble();

describe('mongodb store: change-stream wake-ups', () => {
  it('delivers published messages to subscribers until they unsubscribe', async () => {
    const { store } = await openOnDouble({ notify: true }, { replicaSet: 'rs0' });
    const notifier = store.notifier!;
    const heard: string[] = [];
    const unsubscribe = await notifier.subscribe((name) => heard.push(name));
    await notifier.publish('wake.a');
    await until(() => heard.length === 1);
    await unsubscribe();
    await notifier.publish('wake.b');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(heard).toEqual(['wake.a']);
    await notifier.subscribe(() => {});
    await store.close();
  });
});
