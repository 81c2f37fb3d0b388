import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toPayloadJsonSchema } from '../contract/json-schema.ts';
import { isWorkqError } from '../errors.ts';
import { checkLinearPattern } from './linear-patterns.ts';
import { createPayloadAjv, SHORT_FORMATS } from './payload-ajv.ts';
import { checkSchemaAllowed } from './schema-allowlist.ts';

const LIMITS = { maxSchemaBytes: 65_536, maxSchemaDepth: 64 };
const check = (schema: unknown) => checkSchemaAllowed(schema, LIMITS, 'The JSON Schema of "job" v1');

/** The refusal `check` throws for `schema`: its code and message. */
function refusal(schema: unknown): { code: string; message: string } {
  try {
    check(schema);
  } catch (error) {
    if (isWorkqError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(schema).slice(0, 200)} to be refused`);
}

interface TreeNode {
  value: number;
  children: TreeNode[];
}
const tree: z.ZodType<TreeNode> = z.lazy(() => z.object({ value: z.number(), children: z.array(tree) }));
const category = z.object({
  name: z.string(),
  get subcategories() {
    return z.array(category);
  },
});
const binary = z.object({
  get left() {
    return binary.optional();
  },
  get right() {
    return binary.optional();
  },
});

/** Zod shapes a catalog may hold, each of which must pass as `toPayloadJsonSchema` renders it. */
const SHAPES: Record<string, z.ZodType> = {
  enum: z.object({ kind: z.enum(['a', 'b', 'c']) }),
  union: z.union([z.string(), z.number(), z.object({ a: z.boolean() })]),
  discriminatedUnion: z.discriminatedUnion('type', [
    z.object({ type: z.literal('png'), quality: z.number() }),
    z.object({ type: z.literal('jpeg'), progressive: z.boolean() }),
  ]),
  record: z.record(z.string(), z.number()),
  recordOfEnumKeys: z.record(z.enum(['x', 'y']), z.string()),
  recordOfPatternKeys: z.record(z.string().regex(/^[a-z]+$/), z.string()),
  tuple: z.tuple([z.string(), z.number()]),
  tupleWithRest: z.tuple([z.string()]).rest(z.number()),
  nullable: z.object({ a: z.string().nullable(), b: z.number().nullish() }),
  optionalAndDefaults: z.object({ a: z.string().optional(), b: z.number().default(3), c: z.boolean().catch(false) }),
  dates: z.object({ at: z.date(), day: z.iso.date(), stamp: z.iso.datetime(), time: z.iso.time() }),
  bigint: z.object({ n: z.bigint() }),
  literals: z.object({ a: z.literal('x'), b: z.literal(3), c: z.literal(true), d: z.literal(['p', 'q']) }),
  recursiveLazy: tree,
  recursiveGetter: category,
  recursiveTwice: binary,
  regex: z.object({ slug: z.string().regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/), code: z.string().regex(/\d{3}-\d{4}/) }),
  strings: z.object({
    email: z.email(),
    uuid: z.uuid(),
    guid: z.guid(),
    url: z.url(),
    ipv4: z.ipv4(),
    ipv6: z.ipv6(),
    cidr: z.cidrv6(),
    base64: z.base64(),
    nanoid: z.nanoid(),
    e164: z.e164(),
    ulid: z.ulid(),
    lower: z.string().toLowerCase().lowercase(),
    starts: z.string().startsWith('a.b').endsWith('$').includes('('),
  }),
  intRanges: z.object({
    a: z.number().int().min(1).max(100),
    b: z.int().positive(),
    c: z.number().gt(0).lt(1).multipleOf(0.5),
    d: z.int32(),
  }),
  arrays: z.object({ list: z.array(z.string()).min(1).max(10), set: z.set(z.string()) }),
  strictAndLoose: z.object({ a: z.strictObject({ b: z.string() }), c: z.looseObject({}) }),
  intersection: z.intersection(z.object({ a: z.string() }), z.object({ b: z.number() })),
  refinedAndTransformed: z.object({
    a: z.string().refine((v) => v.length > 2),
    b: z.string().transform((v) => v.length),
    c: z.coerce.number(),
    d: z.preprocess((v) => v, z.string()),
  }),
  described: z.object({
    a: z
      .string()
      .describe('the a')
      .meta({ title: 'A', examples: ['x'], deprecated: true }),
  }),
  any: z.object({ a: z.any(), b: z.unknown(), c: z.never().optional(), d: z.null() }),
  templateLiteral: z.templateLiteral(['id-', z.number()]),
  readonly: z.object({ a: z.string() }).readonly(),
  backtrackingPatterns: z.object({
    host: z.hostname(),
    emoji: z.emoji(),
    duration: z.iso.duration(),
    twice: z
      .string()
      .regex(/^a(?=b)/)
      .regex(/^(x)\1$/),
  }),
};

describe('checkSchemaAllowed', () => {
  it.each(Object.entries(SHAPES))('accepts what z.toJSONSchema makes of %s, and Ajv compiles it', (_name, shape) => {
    const jsonSchema = toPayloadJsonSchema(shape);
    expect(() => check(jsonSchema)).not.toThrow();
    const { $schema: _ignored, ...schema } = jsonSchema;
    expect(() => createPayloadAjv().compile(schema)).not.toThrow();
  });

  it('keeps patterns that need backtracking out of z.toJSONSchema output, listing them as unchecked', () => {
    const jsonSchema = toPayloadJsonSchema(SHAPES.backtrackingPatterns as z.ZodType);
    const { 'x-workq-unchecked': _listed, ...checked } = jsonSchema;
    expect(JSON.stringify(checked)).not.toContain('(?=');
    expect(JSON.stringify(checked)).not.toContain('\\\\1');
    expect(jsonSchema['x-workq-unchecked']).toEqual(
      expect.arrayContaining([
        {
          path: 'host',
          constraint: expect.stringContaining('a lookahead ((?=…)), which a linear-time engine cannot run'),
        },
        { path: 'twice', constraint: expect.stringContaining('a backreference (\\1)') },
      ]),
    );
  });

  it('refuses keywords that load, identify or evaluate schemas, or go async, naming the keyword and where', () => {
    expect(refusal({ $async: true, type: 'object', required: ['x'] })).toEqual({
      code: 'VALIDATION',
      message:
        'The JSON Schema of "job" v1 is refused: keyword "$async" is not allowed (asynchronous validation is not supported) at #/$async.',
    });
    expect(refusal({ properties: { a: { $ref: 'https://example.com/s.json' } } }).message).toContain(
      '"$ref" "https://example.com/s.json" is not local: only "#", "#/$defs/…" and "#/definitions/…" are allowed (nothing is loaded) at #/properties/a/$ref',
    );
    expect(refusal({ $ref: 'other.json#/$defs/a' }).message).toContain('is not local');
    expect(refusal({ $ref: '#/properties/a' }).message).toContain('is not local');
    expect(refusal({ $ref: '#/$defs/missing' }).message).toContain('"$ref" points at no subschema at #/$ref');
    expect(refusal({ $defs: { a: { default: { $async: true } } }, $ref: '#/$defs/a/default' }).message).toContain(
      'points at no subschema',
    );
    expect(refusal({ $id: 'https://json-schema.org/draft/2020-12/schema' }).message).toContain('keyword "$id"');
    expect(refusal({ items: { $dynamicRef: '#meta' } }).message).toContain('keyword "$dynamicRef"');
    expect(refusal({ $defs: { a: { $dynamicAnchor: 'meta' } } }).message).toContain('at #/$defs/a/$dynamicAnchor');
    expect(refusal({ $recursiveRef: '#' }).message).toContain('keyword "$recursiveRef"');
    expect(refusal({ $anchor: 'a' }).message).toContain('keyword "$anchor"');
    expect(refusal({ discriminator: { propertyName: 'a' } }).message).toContain('unknown keyword "discriminator"');
    expect(refusal({ properties: { a: { type: 'string', instanceof: 'Date' } } }).message).toContain(
      'unknown keyword "instanceof" (registered schemas may use the JSON Schema keywords z.toJSONSchema emits, and "x-" annotations) at #/properties/a/instanceof',
    );
    expect(refusal({ $schema: 'https://example.com/my-meta' }).message).toContain('"$schema" may only name');
    expect(
      refusal({ properties: { a: { $schema: 'https://json-schema.org/draft/2020-12/schema' } } }).message,
    ).toContain('at #/properties/a/$schema');
    expect(refusal({ format: 'url' }).message).toContain('format "url" is not allowed');
    expect(refusal({ type: 'array', uniqueItems: true }).message).toContain('"uniqueItems" compares items pairwise');
    expect(refusal({ properties: 5 }).message).toContain('"properties" must map names to subschemas');
    expect(refusal({ anyOf: [{}, 'x'] }).message).toContain('a subschema must be an object or a boolean at #/anyOf/1');
    expect(refusal([]).message).toContain('a payload schema must be a JSON object');
  });

  it('tells keywords from property names: a property may be called anything', () => {
    const names = ['$async', '$ref', '$id', 'then', 'if', '__proto__', 'discriminator', 'properties'];
    const schema = {
      type: 'object',
      properties: Object.fromEntries(names.map((name) => [name, { type: 'string' }])),
      required: names,
      $defs: { $async: { type: 'number' } },
      'x-workq-unchecked': [{ path: '(root)', constraint: 'refinement' }],
      'x-anything': { $async: true },
    };
    expect(() => check(schema)).not.toThrow();
  });

  it('refuses patterns the linear-time engine cannot run, naming the construct', () => {
    expect(refusal({ type: 'string', pattern: '^(a)\\1$' }).message).toContain(
      'pattern "^(a)\\\\1$" uses a backreference (\\1), which needs a backtracking engine',
    );
    expect(refusal({ pattern: '(?<n>a)\\k<n>' }).message).toContain('a named backreference');
    expect(refusal({ pattern: 'a(?=b)' }).message).toContain('a lookahead');
    expect(refusal({ pattern: 'a(?!b)' }).message).toContain('a negative lookahead');
    expect(refusal({ pattern: '(?<=a)b' }).message).toContain('a lookbehind');
    expect(refusal({ patternProperties: { '(?<!a)b': {} } }).message).toContain(
      'a negative lookbehind ((?<!…)), which needs a backtracking engine (it can take exponential time); express it without one at #/patternProperties/(?<!a)b',
    );
    expect(refusal({ pattern: '(' }).message).toContain('is not a valid ECMAScript regular expression');
    expect(refusal({ pattern: '\\p{L}{1000}' }).message).toContain('more than 1000: use smaller repetition counts');
    expect(checkLinearPattern('[(?=]\\(?=x')).toEqual({ instructions: expect.any(Number) });
    expect(checkLinearPattern('^(a+)+$')).toEqual({ instructions: expect.any(Number) });
    const many = {
      properties: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}`, { pattern: `^a${i}$` }])),
    };
    expect(refusal(many).message).toContain('more than 64 distinct patterns');
    const heavy = { anyOf: Array.from({ length: 5 }, (_, i) => ({ pattern: `[\\s\\S]{99${i}}` })) };
    expect(refusal(heavy).message).toContain('instructions in all, more than 4000: use fewer or simpler patterns');
  });

  it('refuses references that apply a subschema to one value without end or exponentially often', () => {
    expect(refusal({ $ref: '#' }).message).toContain('apply this subschema to the same value without end at #');
    expect(
      refusal({ $defs: { a: { allOf: [{ $ref: '#/$defs/b' }] }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' })
        .message,
    ).toContain('without end');
    const doubling = { type: 'array', items: { anyOf: [{ $ref: '#' }, { $ref: '#' }] } };
    expect(refusal(doubling).message).toContain('more than 1000 subschemas would apply to one value of a payload');
    const wide = {
      $defs: {
        a: { anyOf: Array.from({ length: 40 }, () => ({ $ref: '#/$defs/b' })) },
        b: { anyOf: Array.from({ length: 40 }, () => ({ type: 'string' })) },
      },
      $ref: '#/$defs/a',
    };
    expect(refusal(wide).message).toContain('more than 1000 subschemas');
    // One reference per level, however many properties refer back: linear.
    expect(() => check(toPayloadJsonSchema(binary))).not.toThrow();
  });

  it('refuses a schema past the size or depth limit before reading all of it', () => {
    const huge = {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: 20_000 }, (_, i) => [`field${i}`, { type: 'string', description: 'x'.repeat(20) }]),
      ),
    };
    const started = performance.now();
    expect(refusal(huge)).toEqual({
      code: 'PAYLOAD_TOO_LARGE',
      message: expect.stringContaining('its canonical JSON is more than 65536 bytes'),
    });
    expect(performance.now() - started).toBeLessThan(100);
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { a: deep } };
    expect(refusal(deep).message).toContain('more than 64 levels deep at #/properties/a/properties/a/');
  });
});

describe('createPayloadAjv', () => {
  it('runs registered patterns in linear time', () => {
    const validate = createPayloadAjv().compile({ type: 'string', pattern: '^(a+)+$' });
    const started = performance.now();
    expect(validate(`${'a'.repeat(100_000)}!`)).toBe(false);
    expect(validate('aaaa')).toBe(true);
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('checks short formats (dates, addresses) on long text at once, and every format in bounded time', () => {
    const ajv = createPayloadAjv();
    const formats = [
      ...SHORT_FORMATS,
      'uri',
      'uri-reference',
      'uri-template',
      'json-pointer',
      'relative-json-pointer',
      'regex',
      'byte',
    ];
    const long = ['a', '1', 'T', ':', 'a@', '1.', '-', '%', '/'].map((unit) =>
      unit.repeat(Math.floor(262_144 / unit.length)),
    );
    for (const format of formats) {
      const validate = ajv.compile({ type: 'string', format });
      const started = performance.now();
      for (const text of long) validate(`${text}!`);
      expect(performance.now() - started, format).toBeLessThan(1_000);
    }
    expect(ajv.compile({ type: 'string', format: 'date-time' })('2024-02-29T12:00:00Z')).toBe(true);
    expect(ajv.compile({ type: 'string', format: 'email' })(`${'a'.repeat(600)}@example.com`)).toBe(false);
  });
});
