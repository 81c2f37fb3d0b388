import { JOB_STATES, WORKQ_ERROR_CODES } from '@workq/core';
import { z } from 'zod';
import { jsonChildJob, jsonEnqueueOptions } from '../router/inputs.ts';
import { claimBody, completeBody, extendBody, failBody, rateLimitedBody, snoozeBody } from './worker-routes.ts';

/**
 * The OpenAPI 3.1 document of the plain HTTP API (`GET /v1/openapi.json`),
 * from which a client in any language can be written or generated. Request
 * bodies are described from the same Zod schemas the routes parse them with;
 * each job type's payloads (every registered version) and result are
 * components named `<name>.v<version>.payload` and `<name>.result`.
 */

/** One job type as the document describes it. */
export interface DescribedJobType {
  name: string;
  /** The registered JSON Schema of each version's payload. */
  payloads: readonly { version: number; jsonSchema: unknown }[];
  /** The JSON Schema of what its handler returns, when the server's catalog declares one. */
  result?: Record<string, unknown> | undefined;
}

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema) => ({ content: { 'application/json': { schema } } });
const answer = (description: string, schema: Schema) => ({ description, ...json(schema) });
const ERRORS = { default: { $ref: '#/components/responses/Error' } };
const ID_PARAMETER = { name: 'id', in: 'path', required: true, schema: { type: 'string', maxLength: 64 } };

/** The document for the job types a caller may use. */
export function openApiDocument(types: readonly DescribedJobType[]): Schema {
  const schemas: Record<string, Schema> = { ...COMMON_SCHEMAS };
  embed(bodySchema(jsonChildJob), 'FlowChild', schemas);
  const paths: Record<string, Schema> = {};
  for (const type of [...types].sort((a, b) => a.name.localeCompare(b.name))) {
    const payloads = type.payloads.map(({ version, jsonSchema }) => {
      const component = `${type.name}.v${version}.payload`;
      embed(jsonSchema, component, schemas);
      return { version, component };
    });
    if (type.result) embed(type.result, `${type.name}.result`, schemas);
    paths[`/v1/jobs/${type.name}`] = { post: enqueueOperation(type.name, payloads) };
    paths[`/v1/jobs/${type.name}/claim`] = { post: claimOperation(type.name, payloads) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'workq HTTP API',
      version: '1',
      description:
        'Enqueue jobs and run them from any language. Every call takes `Authorization: Bearer <token>`; errors are `{"error": {"code", "message"}}` with a stable workq code. A job type lists only the types the token may produce, consume or register.',
    },
    security: [{ bearer: [] }],
    paths: { ...paths, ...JOB_PATHS },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas,
      responses: { Error: answer('A refusal or failure, with its workq error code.', ref('Error')) },
    },
  };
}

function enqueueOperation(name: string, payloads: readonly { version: number; component: string }[]): Schema {
  const bodies = payloads.map(({ version, component }) => ({
    type: 'object',
    required: ['version', 'payload'],
    properties: {
      version: { const: version },
      payload: ref(component),
      options: ref('EnqueueOptions'),
      children: {
        type: 'array',
        items: ref('FlowChild'),
        description:
          "A flow: the job waits, `waiting-children`, until these children (each with children of its own, at any depth) have ended, all stored in one step. Each child's type needs `produce:` as well.",
      },
    },
  }));
  return {
    operationId: `enqueue.${name}`,
    summary: `Enqueue a ${name} job`,
    description: 'Answers 201 for a new job, 200 for the job an idempotency key or job id already names.',
    requestBody: { required: true, ...json({ oneOf: bodies }) },
    responses: {
      '201': answer('Enqueued.', ref('EnqueueResult')),
      '200': answer('An existing job, named by its idempotency key or id.', ref('EnqueueResult')),
      ...ERRORS,
    },
  };
}

function claimOperation(name: string, payloads: readonly { version: number; component: string }[]): Schema {
  const job = {
    allOf: [
      ref('ClaimedJob'),
      { type: 'object', properties: { payload: { oneOf: payloads.map(({ component }) => ref(component)) } } },
    ],
  };
  return {
    operationId: `claim.${name}`,
    summary: `Claim ${name} jobs (long poll)`,
    description:
      "Leases up to `limit` ready jobs of versions `minVersion`..`maxVersion`, waiting up to `waitMs` (capped by the server) when none is ready; an empty list when none came. Each payload is in its job's own `version`. Needs `consume:" +
      name +
      '`. Run each job, extend its lease before `leaseExpiresAt` while it runs, then complete or fail it.',
    requestBody: { required: true, ...json(bodySchema(claimBody)) },
    responses: {
      '200': answer('The jobs leased.', {
        type: 'object',
        required: ['jobs'],
        properties: { jobs: { type: 'array', items: job } },
      }),
      ...ERRORS,
    },
  };
}

/** A lease operation on one held job: fenced by its lease token, `LEASE_LOST` (409) when the worker no longer holds it. */
function leaseOperation(verb: string, summary: string, body: z.ZodType, ok: Schema): Schema {
  return {
    post: {
      operationId: verb,
      summary,
      parameters: [ID_PARAMETER],
      requestBody: { required: true, ...json(bodySchema(body)) },
      responses: { '200': answer('Done.', ok), ...ERRORS },
    },
  };
}

const JOB_PATHS: Record<string, Schema> = {
  '/v1/job/{id}': {
    get: {
      operationId: 'status',
      summary: "A job's status",
      description: "Needs `produce:` or `consume:` of the job's type.",
      parameters: [ID_PARAMETER],
      responses: { '200': answer("The job's status.", ref('JobStatus')), ...ERRORS },
    },
  },
  '/v1/job/{id}/complete': leaseOperation(
    'complete',
    "Complete a held job with its result (the type's `<name>.result` schema)",
    completeBody,
    { type: 'object', properties: { completed: { const: true } } },
  ),
  '/v1/job/{id}/fail': leaseOperation(
    'fail',
    'Record a failed attempt: retried after its backoff, or dead when permanent or out of attempts',
    failBody,
    {
      type: 'object',
      required: ['state', 'runAt', 'attempts'],
      properties: {
        state: ref('JobState'),
        runAt: { type: 'string', format: 'date-time' },
        attempts: { type: 'integer' },
      },
    },
  ),
  '/v1/job/{id}/extend': leaseOperation('extend', "Extend a held job's lease while it runs", extendBody, {
    type: 'object',
    required: ['leaseExpiresAt'],
    properties: {
      leaseExpiresAt: {
        type: 'string',
        format: 'date-time',
        description:
          "When the lease now ends, as the server keeps it: `leaseMs` from now, or the attempt's deadline (claim time + the job's `timeoutMs`) where that is earlier. No extension goes past the deadline.",
      },
    },
  }),
  '/v1/job/{id}/snooze': leaseOperation(
    'snooze',
    "Put a held job back to wait until `delayMs` from now or `runAt`, its attempt not counted (needs `consume:` of the job's type)",
    snoozeBody,
    { type: 'object', required: ['runAt'], properties: { runAt: { type: 'string', format: 'date-time' } } },
  ),
  '/v1/job/{id}/rate-limited': leaseOperation(
    'rateLimited',
    "Hold the held job's type for `holdMs` on every server (an upstream said 429) and give the job back, ready, its attempt not counted",
    rateLimitedBody,
    {
      type: 'object',
      required: ['heldUntil'],
      properties: {
        heldUntil: {
          type: 'string',
          format: 'date-time',
          description: 'When the hold ends: no job of the type is claimed before it (a later hold stored stays).',
        },
      },
    },
  ),
  '/v1/workers/{workerId}/stop-waiting': {
    post: {
      operationId: 'stopWaiting',
      summary: "End a closing worker's waiting claims",
      description:
        "For a worker that is closing: its claims waiting on this server answer at once, with any job handed to them meanwhile (run it before exiting), and its claims arriving in the next seconds do not wait. Needs a `consume:` scope; only claims of types the token may consume are touched. `claims` counts the worker's claims that were in progress on this server.",
      parameters: [{ name: 'workerId', in: 'path', required: true, schema: { type: 'string', maxLength: 64 } }],
      responses: {
        '200': answer('How many of its claims were in progress here.', {
          type: 'object',
          required: ['claims'],
          properties: { claims: { type: 'integer' } },
        }),
        ...ERRORS,
      },
    },
  },
  '/v1/job/{id}/cancel': {
    post: {
      operationId: 'cancel',
      summary: 'Cancel a job that has not finished',
      description: "Needs `produce:` of the job's type; `cancelled` says whether this call cancelled it.",
      parameters: [ID_PARAMETER],
      responses: {
        '200': answer('Whether it was cancelled.', {
          type: 'object',
          required: ['cancelled'],
          properties: { cancelled: { type: 'boolean' } },
        }),
        ...ERRORS,
      },
    },
  },
  '/v1/openapi.json': {
    get: {
      operationId: 'openapi',
      summary: 'This document, for the job types the token may use',
      responses: { '200': answer('The OpenAPI document.', { type: 'object' }), ...ERRORS },
    },
  },
};

const date = { type: 'string', format: 'date-time' };
const JOB_IDENTITY = { id: { type: 'string' }, name: { type: 'string' } };
const jobError = {
  type: 'object',
  properties: {
    message: { type: 'string' },
    name: { type: 'string' },
    code: { type: 'string' },
    attempt: { type: 'integer' },
  },
};

const COMMON_SCHEMAS: Record<string, Schema> = {
  Error: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          // `JOB_FAILED` is the SDK's own (a result of a dead job); the server never answers it.
          code: { enum: WORKQ_ERROR_CODES.filter((code) => code !== 'JOB_FAILED') },
          message: { type: 'string' },
          details: {},
          requestId: { type: 'string', description: 'On a 5xx: names the request in the server log.' },
        },
      },
    },
  },
  JobState: { enum: [...JOB_STATES] },
  EnqueueOptions: bodySchema(jsonEnqueueOptions.unwrap()),
  EnqueueResult: {
    type: 'object',
    required: ['id', 'created', 'state'],
    properties: {
      id: { type: 'string' },
      created: { type: 'boolean' },
      state: ref('JobState'),
      warnings: {
        type: 'array',
        items: { type: 'string' },
        description: 'Constraints of the payload schema the server could not check.',
      },
    },
  },
  ClaimedJob: {
    type: 'object',
    required: ['id', 'name', 'version', 'payload', 'attempt', 'maxAttempts', 'leaseToken', 'leaseMs', 'leaseExpiresAt'],
    properties: {
      ...JOB_IDENTITY,
      version: { type: 'integer', description: 'The version the job was enqueued with, which its payload follows.' },
      payload: {},
      attempt: { type: 'integer', description: '1-based number of this attempt.' },
      maxAttempts: { type: 'integer' },
      leaseToken: { type: 'string', description: 'Send it with complete, fail, extend, snooze and rate-limited.' },
      leaseMs: {
        type: 'integer',
        description: "The job's own lease length, which an extend without `leaseMs` grants.",
      },
      timeoutMs: {
        type: 'integer',
        description:
          "The job's time limit, when it has one: stop work this long after the claim. No lease outlives it; the attempt then fails with TIMEOUT and its late complete is refused with LEASE_LOST.",
      },
      leaseExpiresAt: date,
    },
  },
  JobStatus: {
    type: 'object',
    required: ['id', 'name', 'version', 'state', 'attempts', 'maxAttempts', 'progress', 'createdAt', 'runAt'],
    properties: {
      ...JOB_IDENTITY,
      version: { type: 'integer' },
      state: ref('JobState'),
      priority: { type: 'integer' },
      attempts: { type: 'integer' },
      maxAttempts: { type: 'integer' },
      progress: { type: 'number' },
      result: { description: "Once completed: what its handler returned (the type's `<name>.result`)." },
      error: { ...jobError, description: "The last failed attempt's error." },
      createdAt: date,
      updatedAt: date,
      runAt: date,
      finishedAt: date,
      leaseExpiresAt: date,
    },
  },
};

/** A Zod schema of a request body as JSON Schema (the input side: what a client sends). */
function bodySchema(schema: z.ZodType): Schema {
  const converted = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Schema;
  delete converted.$schema;
  return converted;
}

/**
 * Puts a JSON Schema into `schemas` as `component`, its `$defs` beside it as
 * `<component>.<def>`, with its `$ref`s pointed at them: a `$ref` in a
 * component resolves against the document, not the schema it came from.
 */
function embed(jsonSchema: unknown, component: string, schemas: Record<string, Schema>): void {
  const target = (pointer: string): string => {
    if (pointer === '#') return `#/components/schemas/${component}`;
    const def = /^#\/\$defs\/([^/]+)(.*)$/.exec(pointer);
    return def ? `#/components/schemas/${component}.${def[1]}${def[2]}` : pointer;
  };
  const repoint = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(repoint);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        key === '$ref' && typeof item === 'string' ? target(item) : repoint(item),
      ]),
    );
  };
  const { $schema: _dialect, $defs, ...schema } = (jsonSchema ?? {}) as Schema;
  schemas[component] = repoint(schema) as Schema;
  for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, unknown>)) {
    schemas[`${component}.${name}`] = repoint(def) as Schema;
  }
}
