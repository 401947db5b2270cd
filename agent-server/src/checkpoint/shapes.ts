/**
 * Copies of a LangChain object's plain data, and the check that an object still holds them
 * (`message-texts.ts` uses a remembered text only while its object passes it).
 *
 * A copy is split in two. Its layout (a `Shape`: lists and objects with their keys in order,
 * down to leaves that hold primitives) is shared by every copy with the same layout: a
 * conversation's messages have a handful. Each copy keeps only its leaves' values, in one flat
 * list. And each layout compiles, once, to a function that reads the fields it names directly
 * (`o["content"] === l[at + 2]`), with the keys' order checked by one `for…in`.
 *
 * Why: a run checks every message of its conversation at each checkpoint it writes, and at
 * 1,000 messages that was most of what a run cost beyond a fresh thread's. Copies kept as trees
 * of their own (a list of keys and of values per object) made a check read twice as many
 * scattered objects as the message itself holds, and a check walking them generically read
 * every field by a key only known at run time: ~2 µs a message with cold caches, 0.55 µs warm.
 * Flat leaves brought that to ~1.6 µs; compiled checks to ~1.1 µs and 0.25 µs
 * (docs/design/checkpoint-layout.md).
 */

import { LruCache } from "../storage/lru-cache.ts";

/** A primitive, compared by `===`. */
const LEAF = 0;
const LIST = 1;
/** A plain object, or the LangChain object itself at the root. */
const FIELDS = 2;
/** A LangChain object's `lc_kwargs`: its entries may be the object's own fields. */
const KWARGS = 3;
/**
 * An `lc_kwargs` entry holding an object that is the LangChain object's field of the same key
 * (its constructor keeps the very same objects): unchanged while it still is that field (which is
 * compared on its own), else while it still holds the copied data.
 */
const SAME_AS_FIELD = 4;

/** Whether `live` still holds the data of a copy whose leaves start at `leaves[at]`. */
type Check = (live: object, leaves: readonly unknown[], at: number, owner?: object) => boolean;

/** The layout of a copy of plain data; interned, so one per distinct layout. */
class Shape {
  readonly kind: number;
  /** `FIELDS` and `KWARGS`: the object's own enumerable keys, in order. */
  readonly keys: readonly string[];
  /** A list's items, an object's values, or (`SAME_AS_FIELD`) the one shape it has. */
  readonly children: readonly Shape[];
  /** Leaves in this shape: where the next shape's values start in the flat list. */
  readonly leaves: number;
  readonly id: number;
  /**
   * The check of a list's items or an object's fields, compiled when the layout is first met.
   * A leaf, or a kwargs entry that may be its field, is compared inline by its parent's check.
   */
  readonly check: Check;

  constructor(kind: number, keys: readonly string[], children: readonly Shape[], id: number) {
    this.kind = kind;
    this.keys = keys;
    this.children = children;
    this.leaves = kind === LEAF ? 1 : children.reduce((sum, child) => sum + child.leaves, 0);
    this.id = id;
    this.check = kind === LEAF || kind === SAME_AS_FIELD ? inline : compile(this);
  }
}

function inline(): never {
  throw new Error("compared inline by its parent's check");
}

/**
 * The layouts met lately, least recently used out first: a graph with ever new keys (tool
 * arguments) cannot grow it. A copy holds its layout, so a forgotten one still checks the
 * copies made with it; the next object of that layout gets a layout (and a compiled check) anew.
 */
const shapes = new LruCache<Shape>(4096);
let nextId = 0;

function shapeOf(kind: number, keys: readonly string[], children: readonly Shape[]): Shape {
  const key = `${kind}${JSON.stringify(keys)}${children.map((child) => child.id).join(",")}`;
  let shape = shapes.get(key);
  if (!shape) shapes.set(key, (shape = new Shape(kind, keys, children, nextId++)));
  return shape;
}

const LEAF_SHAPE = new Shape(LEAF, [], [], nextId++);

/** Nesting beyond this is not copied (the object is then never remembered). */
const MAX_DEPTH = 32;

const isPlainObject = (value: object) => Object.getPrototypeOf(value) === Object.prototype;

/** The shape of plain data, its leaves pushed to `leaves`; undefined when there is anything else in it (a date, a class instance). */
function copyOf(value: unknown, depth: number, leaves: unknown[]): Shape | undefined {
  const kind = typeof value;
  if (value === null || kind === "undefined" || kind === "string" || kind === "number" || kind === "boolean") {
    leaves.push(value);
    return LEAF_SHAPE;
  }
  if (kind !== "object" || depth > MAX_DEPTH) return undefined;
  if (!Array.isArray(value))
    return isPlainObject(value as object) ? fieldsOf(value as Record<string, unknown>, depth, leaves) : undefined;
  const items: Shape[] = [];
  for (const item of value) {
    const shape = copyOf(item, depth + 1, leaves);
    if (!shape) return undefined;
    items.push(shape);
  }
  return shapeOf(LIST, [], items);
}

/** An own enumerable field: one that a check compares. */
const isOwnField = (value: object, key: string) => Object.prototype.propertyIsEnumerable.call(value, key);

/** `owner`: the LangChain object whose `lc_kwargs` these are. */
function fieldsOf(
  value: Record<string, unknown>,
  depth: number,
  leaves: unknown[],
  owner?: Record<string, unknown>,
): Shape | undefined {
  const keys: string[] = [];
  const children: Shape[] = [];
  for (const key in value) {
    const item = value[key];
    let shape = key === "lc_kwargs" && depth === 0 ? kwargsOf(item, value, leaves) : copyOf(item, depth + 1, leaves);
    if (shape && owner && typeof item === "object" && item !== null && owner[key] === item && isOwnField(owner, key))
      shape = shapeOf(SAME_AS_FIELD, [], [shape]);
    if (!shape) return undefined;
    keys.push(key);
    children.push(shape);
  }
  return shapeOf(owner ? KWARGS : FIELDS, keys, children);
}

const kwargsOf = (kwargs: unknown, owner: Record<string, unknown>, leaves: unknown[]) =>
  typeof kwargs === "object" && kwargs !== null && isPlainObject(kwargs)
    ? fieldsOf(kwargs as Record<string, unknown>, 1, leaves, owner)
    : undefined;

/** A copy of a LangChain object's own fields, as they are now. */
export interface FieldsCopy {
  readonly shape: Shape;
  readonly leaves: readonly unknown[];
}

/** A copy of `object`'s fields, or undefined when they hold anything but plain data. */
export function copyFields(object: object): FieldsCopy | undefined {
  const leaves: unknown[] = [];
  const shape = fieldsOf(object as Record<string, unknown>, 0, leaves);
  return shape && { shape, leaves };
}

/** Whether `object` has the same keys in the same order, and the same values, as `copy` (its class aside). */
export const holdsCopy = (object: object, copy: FieldsCopy) => copy.shape.check(object, copy.leaves, 0);

/**
 * A JavaScript condition on `v`: that it holds the data `shape` describes, its leaves starting at
 * `leaves[at + offset]`. `dependency` names a value the compiled function is given.
 */
function condition(shape: Shape, offset: number, dependency: (value: unknown) => string): string {
  const at = `at + ${offset}`;
  switch (shape.kind) {
    case LEAF:
      return `v === l[${at}]`;
    case LIST:
      return `Array.isArray(v) && v.length === ${shape.children.length} && ${dependency(shape.check)}(v, l, ${at})`;
    case FIELDS:
      return `typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype && ${dependency(shape.check)}(v, l, ${at})`;
    default:
      return `typeof v === "object" && v !== null && ${dependency(shape.check)}(v, l, ${at}, o)`;
  }
}

/**
 * `shape`'s check as a function of its own. Property names are written as JSON string literals,
 * which are JavaScript string literals too: a key, whatever it holds, cannot become code.
 */
function compile(shape: Shape): Check {
  const dependencies: unknown[] = [];
  const dependency = (value: unknown) => `d[${dependencies.push(value) - 1}]`;
  const lines: string[] = ["let v;"];
  if (shape.kind === FIELDS || shape.kind === KWARGS) {
    lines.push(
      `const keys = ${dependency(shape.keys)};`,
      "let n = 0;",
      "for (const key in o) if (key !== keys[n++]) return false;",
      `if (n !== ${shape.keys.length}) return false;`,
    );
  }
  let offset = 0;
  shape.children.forEach((child, i) => {
    const key = shape.kind === LIST ? String(i) : JSON.stringify(shape.keys[i]);
    lines.push(`v = o[${key}];`);
    if (child.kind === SAME_AS_FIELD) {
      const copy = condition(child.children[0] as Shape, offset, dependency);
      lines.push(`if (owner[${key}] !== v && !(${copy})) return false;`);
    } else lines.push(`if (!(${condition(child, offset, dependency)})) return false;`);
    offset += child.leaves;
  });
  lines.push("return true;");
  const body = `return function check(o, l, at, owner) {\n${lines.join("\n")}\n};`;
  return new Function("d", body)(dependencies) as Check;
}
