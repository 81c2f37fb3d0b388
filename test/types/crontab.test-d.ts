import { defineCrontab } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { describe, it } from 'vitest';

describe('crontab types', () => {
  it('types each entry’s payload by its job', () => {
    defineCrontab(jobs, [
      { cron: '0 3 * * *', name: 'sendEmail', payload: { to: 'ops@example.com', subject: 'daily', body: '' } },
      { cron: '0 4 * * *', name: 'imageConvert', payload: { source: 'a.png', output: 'b.webp' } },
    ]);
    defineCrontab(jobs, [
      // @ts-expect-error sendEmail needs `subject` and `body`
      { cron: '0 3 * * *', name: 'sendEmail', payload: { to: 'ops@example.com' } },
    ]);
    defineCrontab(jobs, [
      // @ts-expect-error an imageConvert payload is not a sendEmail payload
      { cron: '0 3 * * *', name: 'sendEmail', payload: { source: 'a.png', output: 'b.webp' } },
    ]);
    // @ts-expect-error there is no job named resizeVideo
    defineCrontab(jobs, [{ cron: '0 3 * * *', name: 'resizeVideo', payload: {} }]);
  });
});
