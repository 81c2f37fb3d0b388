import { MongoClient, MongoServerSelectionError } from 'mongodb';
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
});
