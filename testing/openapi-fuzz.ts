/**
 * Bad requests generated from an OpenAPI 3.1 document, reproducible from a seed: a value that
 * fits each schema, then one mutation (a wrong type, a missing or extra field, a huge, deep or
 * wide value, odd numbers and strings), and bad path ids and query parameters.
 */

type Schema = Record<string, unknown>;
type Json = unknown;

export interface Operation {
  method: string;
  /** OpenAPI path template, e.g. `/threads/{thread_id}/runs`. */
  path: string;
  pathParams: string[];
  query: { name: string; schema: Schema }[];
  body?: Schema;
}

export interface FuzzRequest {
  method: string;
  /** Path with its parameters filled in, and the query string. */
  url: string;
  contentType?: string;
  body?: string;
}

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export class Random {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(max: number): number {
    return Math.floor(this.next() * max);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** The parts of an OpenAPI document the generator reads. */
export interface OpenApiDocument {
  paths: Record<string, Record<string, Schema>>;
  components?: { schemas?: Record<string, Schema> };
}

/** The operations of a document, with `$ref`s resolved lazily by the generator. */
export function operationsOf(doc: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const parameters = (op.parameters ?? []) as { name: string; in: string; schema?: Schema }[];
      const content = (op.requestBody as { content?: Record<string, { schema: Schema }> } | undefined)?.content;
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === "path").map((p) => p.name),
        query: parameters.filter((p) => p.in === "query").map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: content?.["application/json"]?.schema,
      });
    }
  }
  return operations;
}

export const nestedArrays = (depth: number, leaf: Json = 0): string =>
  `${"[".repeat(depth)}${JSON.stringify(leaf)}${"]".repeat(depth)}`;
export const nestedValue = (depth: number): Json => {
  let value: Json = "leaf";
  for (let i = 0; i < depth - 1; i++) value = i % 2 ? [value] : { d: value };
  return value;
};
export const wideObject = (keys: number): Record<string, number> =>
  Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, i]));

/**
 * A large value built and serialised once, then sent as that JSON text wherever it is drawn:
 * building a 10,000-key object costs the fuzzer more than the server spends refusing it.
 */
class Prebuilt {
  readonly #json: string;
  constructor(json: string) {
    this.#json = json;
  }
  get json(): string {
    return this.#json;
  }
  /** By its private field, not its prototype: a record whose `__proto__` key was set to one is no `Prebuilt`. */
  static is(value: unknown): value is Prebuilt {
    return typeof value === "object" && value !== null && #json in value;
  }
}

const prebuilt = new Map<string, Prebuilt>();
const once = (key: string, build: () => string): Prebuilt => {
  let value = prebuilt.get(key);
  if (!value) {
    value = new Prebuilt(build());
    prebuilt.set(key, value);
  }
  return value;
};

/** JSON text of a generated value: `Prebuilt` ones (the whole value, or a field of it) as their text. */
function toJson(value: Json): string {
  if (Prebuilt.is(value)) return value.json;
  if (value === null || typeof value !== "object" || Array.isArray(value)) return JSON.stringify(value);
  const fields = Object.entries(value as Record<string, Json>);
  if (!fields.some(([, field]) => Prebuilt.is(field))) return JSON.stringify(value);
  const parts = fields.flatMap(([key, field]) =>
    field === undefined ? [] : [`${JSON.stringify(key)}:${toJson(field)}`],
  );
  return `{${parts.join(",")}}`;
}

const ODD_STRINGS = [
  "",
  " ",
  "\u0000",
  "null",
  "__proto__",
  "constructor",
  "../../etc/passwd",
  "%00%2F",
  "💥".repeat(50),
  "\ud800",
  "a".repeat(70_000),
  "00000000-0000-0000-0000-000000000000",
  "*",
  "' OR 1=1 --",
  "${jndi:ldap://x}",
];
const ODD_NUMBERS = [0, -1, -0.5, 1e308, -1e308, 2 ** 53 + 1, 1.5, 1e-300, 4294967296];

/**
 * Longest URL sent. Node refuses a request head over 16 KiB itself (431, then it resets the
 * connection, so a client still sending may read only the reset) before any of the server's
 * code runs: longer URLs would test Node, and read as network failures.
 */
const MAX_URL_LENGTH = 15_000;

/** The query string of `params`, less its last parameters while the URL would be too long. */
function fitted(path: string, params: [string, string][]): string {
  let search = new URLSearchParams(params).toString();
  while (params.length > 0 && path.length + search.length + 1 > MAX_URL_LENGTH) {
    params.pop();
    search = new URLSearchParams(params).toString();
  }
  return search;
}

export class BadRequests {
  readonly #random: Random;
  readonly #components: Record<string, Schema>;
  /** Ids the generator never puts in a path: the sentinel records must not be touched. */
  readonly #forbidden: Set<string>;

  constructor(random: Random, doc: OpenApiDocument, forbidden: string[]) {
    this.#random = random;
    this.#components = doc.components?.schemas ?? {};
    this.#forbidden = new Set(forbidden);
  }

  #resolve(schema: Schema): Schema {
    const ref = schema.$ref;
    return typeof ref === "string" ? (this.#components[ref.split("/").at(-1) as string] ?? {}) : schema;
  }

  #string(): string {
    const r = this.#random;
    return r.chance(0.7) ? `fz${r.int(1e9).toString(36)}` : r.pick(ODD_STRINGS);
  }

  /** A value of `schema` (often a valid one; strings are random, so ids rarely exist). */
  sample(schema: Schema, depth = 0): Json {
    const r = this.#random;
    const s = this.#resolve(schema);
    if (depth > 6) return null;
    if ("const" in s) return s.const;
    if (Array.isArray(s.enum)) return r.pick(s.enum);
    const alternatives = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (alternatives) return this.sample(r.pick(alternatives), depth + 1);
    const type = Array.isArray(s.type) ? r.pick(s.type as string[]) : s.type;
    switch (type) {
      case "object": {
        const props = (s.properties ?? {}) as Record<string, Schema>;
        const required = new Set((s.required ?? []) as string[]);
        const value: Record<string, Json> = {};
        for (const [key, prop] of Object.entries(props)) {
          if (required.has(key) || r.chance(0.5)) value[key] = this.sample(prop, depth + 1);
        }
        return value;
      }
      case "array": {
        const items = (s.items ?? {}) as Schema;
        const min = typeof s.minItems === "number" ? s.minItems : 0;
        return Array.from({ length: min + r.int(3) }, () => this.sample(items, depth + 1));
      }
      case "string":
        return s.format === "uuid"
          ? crypto.randomUUID()
          : s.format === "date-time"
            ? new Date().toISOString()
            : this.#string();
      case "integer":
        return r.chance(0.8) ? r.int(20) : r.pick(ODD_NUMBERS);
      case "number":
        return r.chance(0.8) ? r.next() * 100 : r.pick(ODD_NUMBERS);
      case "boolean":
        return r.chance(0.5);
      case "null":
        return null;
      default:
        return r.chance(0.5) ? { any: this.#string() } : this.#string();
    }
  }

  /** Any value of the wrong kind, or an oversized one. */
  #wrong(): Json {
    const r = this.#random;
    switch (r.int(10)) {
      case 0: {
        const depth = r.pick([200, 255, 400]);
        return once(`deep ${depth}`, () => JSON.stringify(nestedValue(depth)));
      }
      case 1: {
        const keys = r.pick([200, 5_000, 10_001]);
        return once(`wide ${keys}`, () => JSON.stringify(wideObject(keys)));
      }
      case 2: {
        const length = r.pick([1_000, 20_000]);
        return once(`long ${length}`, () => JSON.stringify(Array.from({ length }, (_, i) => i)));
      }
      case 3:
        return r.pick(ODD_NUMBERS);
      case 4:
        return r.pick(ODD_STRINGS);
      case 5:
        return null;
      case 6:
        return r.chance(0.5);
      case 7:
        return [this.#string(), { nested: [null] }];
      case 8:
        return { __proto__: { polluted: true }, constructor: { prototype: { x: 1 } } };
      default:
        return {};
    }
  }

  /** One mutation of a valid-looking value: wrong field, missing field, extra field, or wrong whole. */
  #mutate(value: Json): Json {
    const r = this.#random;
    if (!value || typeof value !== "object" || Array.isArray(value) || r.chance(0.15)) return this.#wrong();
    const record = { ...(value as Record<string, Json>) };
    const keys = Object.keys(record);
    const key = keys.length > 0 && r.chance(0.8) ? r.pick(keys) : this.#string();
    if (r.chance(0.2)) delete record[key];
    else record[key] = this.#wrong();
    return record;
  }

  #pathValue(): string {
    const r = this.#random;
    let value: string;
    do {
      value = r.chance(0.4) ? crypto.randomUUID() : r.chance(0.3) ? "agent" : this.#string().slice(0, 3000);
    } while (this.#forbidden.has(value));
    return encodeURIComponent(value.toWellFormed());
  }

  #queryValue(schema: Schema): string {
    const r = this.#random;
    switch (r.int(6)) {
      case 0: {
        // 2,000 levels still fit in a URL (MAX_URL_LENGTH), far past the server's 256.
        const depth = r.pick([10, 300, 2_000]);
        return once(`arrays ${depth}`, () => nestedArrays(depth)).json;
      }
      case 1: {
        const keys = r.pick([10, 500]);
        return once(`wide ${keys}`, () => JSON.stringify(wideObject(keys))).json;
      }
      case 2:
        return String(r.pick(ODD_NUMBERS));
      case 3:
        return r.pick(ODD_STRINGS).slice(0, 2000);
      default:
        return String(this.sample(schema));
    }
  }

  /** A bad request to `operation`. */
  request(operation: Operation): FuzzRequest {
    const r = this.#random;
    let url = operation.path.replace(/\{([^}]+)\}/g, () => this.#pathValue());
    const query = new URLSearchParams();
    for (const { name, schema } of operation.query) if (r.chance(0.5)) query.append(name, this.#queryValue(schema));
    if (r.chance(0.1)) query.append(this.#string().slice(0, 50), this.#queryValue({}));
    if (r.chance(0.05)) for (let i = 0; i < 30; i++) query.append(`a[${i}][b][c][d][e][f]`, "x");
    const search = fitted(url, [...query]);
    if (search) url += `?${search}`;
    if (!operation.body && operation.method === "GET") return { method: operation.method, url };
    const roll = r.next();
    if (roll < 0.05) return { method: operation.method, url, contentType: "text/plain", body: "{}" };
    if (roll < 0.1) return { method: operation.method, url, contentType: "application/json", body: '{"a": [1, ' };
    if (roll < 0.13) {
      const body = once("arrays 5000", () => nestedArrays(5_000)).json;
      return { method: operation.method, url, contentType: "application/json", body };
    }
    if (roll < 0.16) {
      const body = once("wide 12000", () => JSON.stringify(wideObject(12_000))).json;
      return { method: operation.method, url, contentType: "application/json", body };
    }
    const valid = operation.body ? this.sample(operation.body) : {};
    const body = r.chance(0.15) ? valid : this.#mutate(valid);
    return { method: operation.method, url, contentType: "application/json", body: toJson(body) };
  }
}
