import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { WorkqError } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { BodyBudget, dropBodyBytes, holdBodyBytes, ownBodyBytes } from './body-budget.ts';

const request = () => new IncomingMessage(new Socket());

describe('BodyBudget', () => {
  it('refuses a budget smaller than the largest request body, or not an integer (VALIDATION)', () => {
    for (const maxBytes of [999, 1_000.5, Number.NaN]) {
      expect(() => new BodyBudget(maxBytes, 1_000)).toThrow(
        expect.objectContaining({ code: 'VALIDATION', message: expect.stringContaining('maxBodyBytesInFlight') }),
      );
    }
    expect(new BodyBudget(1_000, 1_000).maxBytes).toBe(1_000);
  });

  it('holds each admitted request body until its release, and refuses the bytes past the budget', () => {
    const budget = new BodyBudget(100, 60);
    const [a, b, c] = [request(), request(), request()];
    for (const req of [a, b, c]) budget.admit(req);
    holdBodyBytes(a, 30);
    holdBodyBytes(a, 30);
    holdBodyBytes(b, 40);
    expect(budget.held).toBe(100);

    let refusal: unknown;
    try {
      holdBodyBytes(c, 1);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(WorkqError);
    expect(refusal).toMatchObject({ code: 'UNAVAILABLE', retryable: true, details: { limit: 'maxBodyBytesInFlight' } });
    expect(budget.held).toBe(100);

    budget.release(a);
    expect(budget.held).toBe(40);
    holdBodyBytes(c, 60);
    expect(budget.held).toBe(100);
    // A refused request gives back what it held at once, before its answer is sent.
    expect(() => holdBodyBytes(b, 1)).toThrow(WorkqError);
    expect(budget.held).toBe(60);
    dropBodyBytes(c);
    expect(budget.held).toBe(0);
    budget.release(a);
    budget.release(b);
    budget.release(c);
    expect(budget.held).toBe(0);
  });

  it("holds one token's requests to half the budget, or one largest body, while other tokens go on", () => {
    expect(new BodyBudget(100, 40).callerShare).toBe(50);
    expect(new BodyBudget(100, 80).callerShare).toBe(80);
    const budget = new BodyBudget(100, 40);
    const [a1, a2, b, open] = [request(), request(), request(), request()];
    for (const req of [a1, a2, b, open]) budget.admit(req);
    ownBodyBytes(a1, 'token-a');
    ownBodyBytes(a2, 'token-a');
    ownBodyBytes(b, 'token-b');
    holdBodyBytes(a1, 30);
    holdBodyBytes(a2, 20);
    expect(budget.heldBy('token-a')).toBe(50);

    let refusal: unknown;
    try {
      holdBodyBytes(a2, 1);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({
      code: 'UNAVAILABLE',
      retryable: true,
      details: { limit: 'maxBodyBytesInFlight' },
      message: expect.stringContaining("This caller's requests"),
    });
    expect([budget.held, budget.heldBy('token-a'), budget.refused]).toEqual([30, 30, 1]);

    holdBodyBytes(b, 50);
    // A request without a token (open mode) counts toward the whole budget only.
    holdBodyBytes(open, 20);
    expect(() => holdBodyBytes(open, 1)).toThrow(
      expect.objectContaining({ message: expect.stringContaining('This server holds') }),
    );
    expect([budget.held, budget.heldBy('token-b')]).toEqual([80, 50]);
    for (const req of [a1, a2, b, open]) budget.release(req);
    expect([budget.held, budget.heldBy('token-a'), budget.heldBy('token-b')]).toEqual([0, 0, 0]);
  });

  it("leaves a request it never admitted, and another budget's, alone", () => {
    const budget = new BodyBudget(10, 10);
    const other = new BodyBudget(10, 10);
    const stranger = request();
    holdBodyBytes(stranger, 1_000);
    const theirs = request();
    other.admit(theirs);
    holdBodyBytes(theirs, 10);
    budget.release(theirs);
    expect([budget.held, other.held]).toEqual([0, 10]);
  });
});
