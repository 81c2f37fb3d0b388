import { MongoClient, type MongoServerError, MongoServerSelectionError } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { startMongoWireDouble } from './server.ts';

/** The fail points of the fake primary, through the real driver, as the server's test interface sets them. */
describe('MongoDB wire double: fail points', () => {
  const opened: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const item of opened.reverse()) await item.close();
  });

  it('failCommand takes hello too: a client whose handshakes it fails finds no server, another client does', async () => {
    const double = await startMongoWireDouble();
    opened.push(double);
    double.configureFailPoint('failCommand', 'alwaysOn', {
      failCommands: ['hello', 'isMaster'],
      closeConnection: true,
      appName: 'sick',
    });
    const sick = new MongoClient(double.url, { appName: 'sick', serverSelectionTimeoutMS: 1_000 });
    opened.push(sick);
    await expect(sick.connect()).rejects.toBeInstanceOf(MongoServerSelectionError);
    const well = new MongoClient(double.url, { appName: 'well', serverSelectionTimeoutMS: 5_000 });
    opened.push(well);
    await expect(well.db('admin').command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
  });

  it('reads a mode as the server does: times when given, a skip beside it ignored; skip alone, then on for good', async () => {
    const double = await startMongoWireDouble();
    opened.push(double);
    const client = new MongoClient(double.url, { serverSelectionTimeoutMS: 5_000 });
    opened.push(client);
    const pings = async (n: number) => {
      const codes: (number | 'ok')[] = [];
      for (let i = 0; i < n; i++) {
        codes.push(
          await client
            .db('admin')
            .command({ ping: 1 })
            .then(
              () => 'ok' as const,
              (error: MongoServerError) => Number(error.code),
            ),
        );
      }
      return codes;
    };
    const data = { failCommands: ['ping'], errorCode: 2 };
    double.configureFailPoint('failCommand', { skip: 1, times: 1 }, data);
    expect(await pings(3)).toEqual([2, 'ok', 'ok']);
    double.configureFailPoint('failCommand', { skip: 1 }, data);
    expect(await pings(3)).toEqual(['ok', 2, 2]);
    double.configureFailPoint('failCommand', 'off');
    expect(() => double.configureFailPoint('failCommand', { times: -1 }, data)).toThrow(
      "'times' option to 'mode' must be positive",
    );
  });
});
