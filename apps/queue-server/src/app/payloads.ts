import { WorkqError } from '@workq/core';
import { plainStoredBytesBound, toStoredValue } from '@workq/core/engine';
import type { ServerServices } from './services.ts';

/**
 * Refuses a payload over the size limit with `PAYLOAD_TOO_LARGE`, and one no
 * store can keep (NUL, lone surrogates, too deep: see `toStoredValue`) with
 * `VALIDATION`, before anything is stored.
 */
export function checkPayloadSize(payload: unknown, maxBytes: number, name: string): void {
  // Plain JSON whose bound is within the limit is storable and small enough, told in one walk without encoding it.
  const bound = plainStoredBytesBound(payload);
  if (bound !== undefined && bound <= maxBytes) return;
  // Measured as stored: a bigint, Date or Map counts with its encoding.
  const text = JSON.stringify(toStoredValue(payload, `Payload of "${name}"`));
  if (text === undefined) throw new WorkqError('VALIDATION', `Payload of "${name}" must be a JSON value.`);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    throw new WorkqError(
      'PAYLOAD_TOO_LARGE',
      `Payload of "${name}" is ${bytes} bytes; the limit is ${maxBytes}. Store large data elsewhere and enqueue a reference to it.`,
    );
  }
}

/**
 * Refuses payloads over the size limit, then checks them against the
 * registered schema of `name` at `jobVersion`: what every path that stores a
 * client's payload (enqueue, moveTo, updatePayload, a schedule) checks first.
 */
export async function checkPayloads(
  services: Pick<ServerServices, 'options' | 'registry'>,
  name: string,
  jobVersion: number,
  payloads: readonly unknown[],
): Promise<void> {
  for (const payload of payloads) checkPayloadSize(payload, services.options.limits.maxPayloadBytes, name);
  await services.registry.validateAll(name, jobVersion, payloads);
}

export function checkBatchSize(size: number, maxBatchSize: number, what: string): void {
  if (size > maxBatchSize) {
    throw new WorkqError(
      'PAYLOAD_TOO_LARGE',
      `${what} has ${size} items; the limit is ${maxBatchSize}. Split it into smaller batches.`,
    );
  }
}
