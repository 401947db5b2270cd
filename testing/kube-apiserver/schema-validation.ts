import { isDeepStrictEqual } from "node:util";
import type { OpenApiSchema } from "@agentplane/crds";

/** One field error, shaped like the apiserver's `field.Error` (becomes a Status cause). */
export interface FieldError {
  field: string;
  /** Status cause reason, e.g. FieldValueRequired. */
  reason: "FieldValueRequired" | "FieldValueInvalid" | "FieldValueNotSupported" | "FieldValueTypeInvalid";
  message: string;
}

export interface SchemaCheck {
  errors: FieldError[];
  /** Paths of fields dropped because no schema declares them (the apiserver prunes them). */
  unknownFields: string[];
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const INT_BOUNDS: Record<string, [number, number]> = {
  int32: [-2147483648, 2147483647],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function quote(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(JSON.stringify(value));
}

function join(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

/**
 * Validates `value` against a structural CRD schema and prunes undeclared fields in place, the
 * way the apiserver does for custom resources. `metadata`, `apiVersion` and `kind` at the root
 * are the server's business and are skipped. `oldValue` (on update) drives the one transition
 * rule this server evaluates: `self == oldSelf` (immutability); any other CEL rule is ignored.
 */
export function validateAndPrune(schema: OpenApiSchema, value: unknown, oldValue?: unknown): SchemaCheck {
  const check: SchemaCheck = { errors: [], unknownFields: [] };
  visit(schema, value, oldValue, "", check, true);
  return check;
}

function visit(
  schema: OpenApiSchema,
  value: unknown,
  oldValue: unknown,
  path: string,
  check: SchemaCheck,
  root = false,
): void {
  const fail = (reason: FieldError["reason"], message: string) => check.errors.push({ field: path, reason, message });
  if (value === null) {
    if (!schema.nullable)
      fail("FieldValueTypeInvalid", `Invalid value: "null": ${path} in body must be of type ${schema.type}: "null"`);
    return;
  }
  const actual = typeOf(value);
  const typeMatches =
    schema.type === undefined || actual === schema.type || (schema.type === "number" && actual === "integer");
  if (!typeMatches) {
    fail(
      "FieldValueTypeInvalid",
      `Invalid value: "${actual}": ${path} in body must be of type ${schema.type}: "${actual}"`,
    );
    return;
  }
  for (const validation of schema["x-kubernetes-validations"] ?? []) {
    if (validation.rule.replace(/\s+/g, "") === "self==oldSelf" && oldValue !== undefined) {
      if (!isDeepStrictEqual(value, oldValue)) {
        fail(
          "FieldValueInvalid",
          `Invalid value: "object": ${validation.message ?? `failed rule: ${validation.rule}`}`,
        );
      }
    }
  }
  if (schema.enum && !schema.enum.some((allowed) => isDeepStrictEqual(allowed, value))) {
    const supported = schema.enum.map(quote).join(", ");
    fail("FieldValueNotSupported", `Unsupported value: ${quote(value)}: supported values: ${supported}`);
  }
  if (typeof value === "string") checkString(schema, value, path, fail);
  if (typeof value === "number") checkNumber(schema, value, path, fail);
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      fail(
        "FieldValueInvalid",
        `Invalid value: ${value.length}: ${path} in body should have at least ${schema.minItems} items`,
      );
    }
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      fail("FieldValueInvalid", `Too many: ${value.length}: must have at most ${schema.maxItems} items`);
    }
    checkListMapKeys(schema, value, path, check);
    if (schema.items)
      value.forEach((item, i) => visit(schema.items as OpenApiSchema, item, undefined, join(path, i), check));
  }
  if (actual === "object") checkObject(schema, value as Record<string, unknown>, oldValue, path, check, root);
}

function checkString(
  schema: OpenApiSchema,
  value: string,
  path: string,
  fail: (r: FieldError["reason"], m: string) => void,
) {
  if (schema.minLength !== undefined && value.length < schema.minLength) {
    fail(
      "FieldValueInvalid",
      `Invalid value: ${quote(value)}: ${path} in body should be at least ${schema.minLength} chars long`,
    );
  }
  if (schema.maxLength !== undefined && value.length > schema.maxLength) {
    fail("FieldValueInvalid", `Too long: may not be more than ${schema.maxLength} bytes`);
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) {
    fail("FieldValueInvalid", `Invalid value: ${quote(value)}: ${path} in body should match '${schema.pattern}'`);
  }
  if (schema.format === "date-time" && !DATE_TIME.test(value)) {
    fail(
      "FieldValueInvalid",
      `Invalid value: ${quote(value)}: ${path} in body must be of type date-time: ${quote(value)}`,
    );
  }
}

function checkNumber(
  schema: OpenApiSchema,
  value: number,
  path: string,
  fail: (r: FieldError["reason"], m: string) => void,
) {
  if (schema.minimum !== undefined && value < schema.minimum) {
    fail(
      "FieldValueInvalid",
      `Invalid value: ${value}: ${path} in body should be greater than or equal to ${schema.minimum}`,
    );
  }
  if (schema.maximum !== undefined && value > schema.maximum) {
    fail(
      "FieldValueInvalid",
      `Invalid value: ${value}: ${path} in body should be less than or equal to ${schema.maximum}`,
    );
  }
  const bounds = schema.type === "integer" && schema.format ? INT_BOUNDS[schema.format] : undefined;
  if (bounds && (value < bounds[0] || value > bounds[1])) {
    fail("FieldValueInvalid", `Invalid value: ${value}: ${path} in body is out of range for ${schema.format}`);
  }
}

function checkListMapKeys(schema: OpenApiSchema, list: unknown[], path: string, check: SchemaCheck): void {
  const keys = schema["x-kubernetes-list-map-keys"];
  if (schema["x-kubernetes-list-type"] !== "map" || !keys) return;
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const id = JSON.stringify(keys.map((key) => (item as Record<string, unknown> | null)?.[key]));
    if (seen.has(id)) {
      check.errors.push({ field: join(path, i), reason: "FieldValueInvalid", message: `Duplicate value: ${id}` });
    }
    seen.add(id);
  });
}

function checkObject(
  schema: OpenApiSchema,
  object: Record<string, unknown>,
  oldValue: unknown,
  path: string,
  check: SchemaCheck,
  root: boolean,
): void {
  const old = (oldValue ?? undefined) as Record<string, unknown> | undefined;
  for (const key of schema.required ?? []) {
    if (object[key] === undefined) {
      check.errors.push({ field: join(path, key), reason: "FieldValueRequired", message: "Required value" });
    }
  }
  for (const [key, child] of Object.entries(object)) {
    if (root && (key === "metadata" || key === "apiVersion" || key === "kind")) continue;
    const childPath = join(path, key);
    const declared = schema.properties?.[key];
    if (declared) {
      visit(declared, child, old?.[key], childPath, check);
    } else if (typeof schema.additionalProperties === "object") {
      visit(schema.additionalProperties, child, old?.[key], childPath, check);
    } else if (!schema["x-kubernetes-preserve-unknown-fields"] && schema.additionalProperties !== true) {
      check.unknownFields.push(childPath);
      delete object[key];
    }
  }
}
