import { describe, expect, it } from 'vitest';
import { openStore, redactUrl } from '../src/stores/open-store.ts';
import { rejection } from './support/fixtures.ts';

describe('openStore', () => {
  it('rejects an unknown scheme with VALIDATION naming the schemes it knows', async () => {
    const error = await rejection(openStore('redis://user:hunter2@localhost:6379/0'));
    expect(error.code).toBe('VALIDATION');
    for (const scheme of ['postgres://', 'mongodb://', 'mysql://', 'pglite://memory']) {
      expect(error.message).toContain(scheme);
    }
    expect(error.message).toContain('redis://user:***@localhost:6379/0');
    expect(error.message).not.toContain('hunter2');
  });

  it('rejects a string without a scheme with VALIDATION', async () => {
    expect((await rejection(openStore('localhost:5432'))).code).toBe('VALIDATION');
    expect((await rejection(openStore(''))).code).toBe('VALIDATION');
  });

  it('fails with UNAVAILABLE, without the password, when a PostgreSQL server cannot be reached', async () => {
    const error = await rejection(openStore('postgres://postgres:secret@127.0.0.1:1/test'));
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).not.toContain('secret');
    expect(error.message.length).toBeGreaterThan(0);
  }, 30_000);
});

describe('redactUrl', () => {
  it('hides the password and keeps the rest', () => {
    expect(redactUrl('postgres://postgres:secret@127.0.0.1:5432/test')).toBe(
      'postgres://postgres:***@127.0.0.1:5432/test',
    );
    expect(redactUrl('mongodb+srv://app:p%40ss@cluster0.example.net/db?retryWrites=true')).toBe(
      'mongodb+srv://app:***@cluster0.example.net/db?retryWrites=true',
    );
    expect(redactUrl('mysql://root:pw@db:3306/q')).not.toContain('pw@');
  });

  it('leaves URLs without a password unchanged', () => {
    for (const url of ['postgres://postgres@127.0.0.1:5432/test', 'pglite://memory', 'mongodb://localhost:27017/x']) {
      expect(redactUrl(url)).toBe(url);
    }
  });
});
