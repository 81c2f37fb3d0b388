import { describe, expect, it } from 'vitest';
import { isTransient, toWorkqError } from '../src/stores/mongodb/errors.ts';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { rejection } from './support/fixtures.ts';

describe('a MongoDB server out of reach', () => {
  it('is a retryable UNAVAILABLE when the driver lets a socket error through a write waiting to drain', () => {
    // What the driver rejects such a write with when the peer (a proxy, a dying server) closed the socket.
    const ended = Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' });
    const error = toWorkqError(ended, '127.0.0.1:27017', 'insert');
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('Cannot reach MongoDB at 127.0.0.1:27017');
    expect(isTransient(ended)).toBe(true);
  });

  it("waits for a server as long as the connection string's serverSelectionTimeoutMS says", async () => {
    const started = Date.now();
    const error = await rejection(
      createMongoStore({ url: 'mongodb://127.0.0.1:9/workq?serverSelectionTimeoutMS=200' }),
    );
    expect(error.code).toBe('UNAVAILABLE');
    // The default (15 s) would still be waiting.
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
