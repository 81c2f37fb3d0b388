import { TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { WORKQ_ERROR_CODES } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { STATUS_OF_ERROR } from './errors.ts';

describe('STATUS_OF_ERROR', () => {
  it('answers the plain HTTP API with the status tRPC gives the same code, for every workq code', () => {
    for (const code of WORKQ_ERROR_CODES) {
      const { trpc, http } = STATUS_OF_ERROR[code];
      expect(getHTTPStatusCodeFromError(new TRPCError({ code: trpc })), code).toBe(http);
    }
  });
});
