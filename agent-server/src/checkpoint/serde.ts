import { load } from "@langchain/core/load";
import * as messageClasses from "@langchain/core/messages";
import { DeltaSnapshot, JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { holdsKnown, type Known, known, recordListItems, rememberText, type TextCodec } from "./message-texts.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = Record<string, unknown>;

/** Set, Map, RegExp, Error and Uint8Array as `JsonPlusSerializer` writes them (`lc: 2` constructor records). */
function reviveConstructorRecord(record: JsonObject): unknown {
  const { id, method, args } = record;
  if (!Array.isArray(id) || id.length !== 1 || !Array.isArray(args)) return undefined;
  const noMethod = method === undefined || method === null;
  const single = args.length === 1 && Array.isArray(args[0]) ? (args[0] as unknown[]) : undefined;
  switch (id[0]) {
    case "Set":
      return noMethod && single ? new Set(single) : undefined;
    case "Map":
      return noMethod && single?.every((entry) => Array.isArray(entry) && entry.length === 2)
        ? new Map(single as [unknown, unknown][])
        : undefined;
    case "RegExp":
      if (!noMethod || args.length !== 2 || typeof args[0] !== "string" || typeof args[1] !== "string") return;
      try {
        return new RegExp(args[0], args[1]);
      } catch {
        return undefined;
      }
    case "Error":
      return noMethod && args.length === 1 && typeof args[0] === "string" ? new Error(args[0]) : undefined;
    case "Uint8Array":
      return (noMethod || method === "from") &&
        single?.every((item) => typeof item === "number" && Number.isInteger(item) && item >= 0 && item <= 255)
        ? new Uint8Array(single as number[])
        : undefined;
    default:
      return undefined;
  }
}

/** What `JsonPlusSerializer`'s reviver makes of an object whose members are already revived. */
function reviveRecord(record: JsonObject): unknown {
  if (record.lc === 2) {
    if (record.type === "undefined") return undefined;
    if (record.type === "delta_snapshot" && Object.hasOwn(record, "value")) return new DeltaSnapshot(record.value);
    if (record.type === "constructor") return reviveConstructorRecord(record) ?? record;
  }
  if (record.lc === 1 && record.type === "constructor" && Array.isArray(record.id)) {
    return loadMessage(record) ?? load(JSON.stringify(record));
  }
  return record;
}

/** `load()`'s key mapping: a constructor's `lc_aliases` along its prototype chain, inverted. */
const invertedAliases = new WeakMap<object, Record<string, string>>();
function aliasesOf(builder: { prototype: unknown }): Record<string, string> {
  let inverted = invertedAliases.get(builder);
  if (!inverted) {
    const aliases: Record<string, string> = {};
    for (let current = builder; current?.prototype; current = Object.getPrototypeOf(current)) {
      Object.assign(aliases, Reflect.get(current.prototype as object, "lc_aliases"));
    }
    inverted = {};
    for (const [key, value] of Object.entries(aliases)) inverted[value] = key;
    invertedAliases.set(builder, inverted);
  }
  return inverted;
}

/** `load()`'s `keyFromJson`: snake_case JSON keys become camelCase constructor fields. */
function camelCase(key: string): string {
  const trimmed = key.trim();
  if (!/[-_\s]/.test(trimmed)) return trimmed;
  return trimmed
    .replace(/[-_\s]+/g, "_")
    .toLowerCase()
    .replace(/_+([a-z0-9])/g, (_, char: string) => char.toUpperCase());
}

/**
 * A copy of `value` when it is data `load()` would copy as is: plain JSON with no LangChain
 * record (`lc`) or escaped object anywhere, not deeper than its limit; otherwise undefined.
 */
function plainCopy(value: unknown, depth: number): { value: unknown } | undefined {
  if (depth > 40) return undefined;
  if (value === null || typeof value === "string" || typeof value === "boolean") return { value };
  if (typeof value === "number") return Object.is(value, -0) ? undefined : { value };
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (const item of value) {
      const copied = plainCopy(item, depth + 1);
      if (!copied) return undefined;
      items.push(copied.value);
    }
    return { value: items };
  }
  if (typeof value !== "object" || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  if ("lc" in value || "__lc_escaped__" in value) return undefined;
  const copy: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    const copied = plainCopy(item, depth + 1);
    if (!copied) return undefined;
    copy[key] = copied.value;
  }
  return { value: copy };
}

/**
 * A LangChain message, built the way `load()` builds it, for the common case only (a
 * `langchain_core.messages` class, plain kwargs); anything else is left to `load()` itself,
 * whose per-value bookkeeping made it the main cost of reading a conversation's state.
 */
function loadMessage(record: JsonObject): unknown {
  const { id, kwargs } = record;
  if (!Array.isArray(id) || id.length !== 3 || id[0] !== "langchain_core" || id[1] !== "messages") return undefined;
  if (!("kwargs" in record)) return undefined;
  const name = id[2] as string;
  const builder = (messageClasses as Record<string, unknown>)[name];
  if (typeof builder !== "function" || !Object.hasOwn(messageClasses, name)) return undefined;
  const fields = plainCopy(kwargs, 1)?.value;
  if (fields === null || typeof fields !== "object" || Array.isArray(fields)) return undefined;
  const aliases = aliasesOf(builder);
  const mapped: JsonObject = {};
  for (const key in fields) {
    if (Object.hasOwn(fields, key)) mapped[aliases[key] || camelCase(key)] = (fields as JsonObject)[key];
  }
  const instance = new (builder as new (fields: JsonObject) => object)(mapped);
  Object.defineProperty(instance.constructor, "name", { value: name });
  return instance;
}

/**
 * The reviver of `JsonPlusSerializer`, bottom-up like it, but synchronous unless a LangChain
 * object has to go through `load()`: the stock one awaits every single value, which made
 * deserialising checkpoints the main cost of state reads.
 */
function revive(value: Json): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const items = value.map(revive);
    return items.some((item) => item instanceof Promise) ? Promise.all(items) : items;
  }
  const record: JsonObject = {};
  let pending: Promise<unknown>[] | undefined;
  for (const [key, item] of Object.entries(value)) {
    const revived = revive(item);
    record[key] = revived;
    if (revived instanceof Promise) {
      pending ??= [];
      pending.push(revived.then((resolved) => (record[key] = resolved)));
    }
  }
  return pending ? Promise.all(pending).then(() => reviveRecord(record)) : reviveRecord(record);
}

const constructorRecord = (name: string, method: string | null, args: unknown[]) => ({
  lc: 2,
  type: "constructor",
  id: [name],
  method,
  args,
  kwargs: {},
});

/** `JsonPlusSerializer`'s replacer: the values JSON has no form for, as `lc: 2` records. */
function plusReplacer(_key: string, value: unknown): unknown {
  if (value === undefined) return { lc: 2, type: "undefined" };
  if (value instanceof DeltaSnapshot) return { lc: 2, type: "delta_snapshot", value: value.value };
  if (value instanceof Set || value instanceof Map)
    return constructorRecord(value.constructor.name, null, [[...value]]);
  if (value instanceof RegExp) return constructorRecord("RegExp", null, [value.source, value.flags]);
  if (value instanceof Error) return constructorRecord("Error", null, [value.message]);
  const send = value as { lg_name?: unknown; node: unknown; args: unknown; timeout?: unknown } | null;
  if (send?.lg_name === "Send") {
    return { node: send.node, args: send.args, ...(send.timeout !== undefined && { timeout: send.timeout }) };
  }
  if (value instanceof Uint8Array) return constructorRecord("Uint8Array", "from", [[...value]]);
  return value;
}

/** Lists shorter than this are stringified whole: remembering pays on conversations. */
const MIN_LIST_ITEMS = 8;

/** Items known to be unchanged since they were checked, and each one's stored text. */
export interface UncheckedItems {
  readonly items: readonly unknown[];
  readonly texts: readonly Buffer[];
}

/**
 * A list as `JSON.stringify(items, plusReplacer)` writes it, an item at a time, with
 * the remembered text of each LangChain object that is unchanged since it was last serialised
 * (`message-texts.ts`). The same text: an array's items are stringified with the same replacer,
 * which ignores its key and holder, and `toJSON` of LangChain objects takes no key; an item
 * JSON has no form for (a function) is `null` in a list. Throws on a cycle, as stringify does.
 * `held`: the entries of the list's previous version, tried first for the item at their place.
 * `unchanged`: the items `held` was made from and their texts, when no code can have edited them
 * since: the leading items that are those very objects take their entries and texts without a
 * check, or even a look at the entries (`KnownVersion.checked`).
 * `entries`: what each item was remembered as, when every one was (`KnownVersion.entries`).
 */
function stringifyList(
  items: readonly unknown[],
  held: readonly Known[] = [],
  unchanged?: UncheckedItems,
): { parts: Buffer[]; entries?: Known[] } {
  // Sized once: the lists outlive the call (`KnownVersion`), and grown by `push` a long one left
  // a dozen discarded copies of itself behind, in the old generation once V8 saw them survive.
  const parts: Buffer[] = new Array(items.length);
  let entries: Known[] | undefined = new Array(items.length);
  let i = 0;
  if (unchanged) {
    const { items: checked, texts } = unchanged;
    const shared = Math.min(items.length, checked.length, texts.length, held.length);
    for (; i < shared && items[i] === checked[i]; i++) {
      parts[i] = texts[i] as Buffer;
      entries[i] = held[i] as Known;
    }
  }
  for (; i < items.length; i++) {
    const item = items[i];
    const isObject = typeof item === "object" && item !== null;
    const previous = held[i];
    let entry: Known | undefined;
    if (isObject) entry = previous && holdsKnown(item, previous) ? previous : known(item);
    if (!entry) {
      const text = JSON.stringify(item, plusReplacer) ?? "null";
      if (isObject && rememberText(item, text, codec)) entry = known(item);
      if (!entry) {
        entries = undefined;
        parts[i] = Buffer.from(text);
        continue;
      }
    }
    parts[i] = entry.bytes;
    if (entries) entries[i] = entry;
  }
  return { parts, entries };
}

/**
 * `open`, then the texts joined by commas, then `close`, in one new buffer: each text copied
 * once (joining strings and encoding them cost ten times more).
 */
export function joinTexts(texts: readonly Buffer[], open: string, close: string): Buffer {
  let length = open.length + close.length + Math.max(texts.length - 1, 0);
  for (const text of texts) length += text.length;
  const bytes = Buffer.allocUnsafe(length);
  let offset = bytes.write(open);
  for (let i = 0; i < texts.length; i++) {
    if (i > 0) bytes[offset++] = 0x2c;
    offset += (texts[i] as Buffer).copy(bytes, offset);
  }
  bytes.write(close, offset);
  return bytes;
}

/** `[a,b,…]` from the items' bytes. */
export const joinList = (parts: readonly Buffer[]) => joinTexts(parts, "[", "]");

/** The value a text loads to, when that needs no `load()` (which is asynchronous); else undefined. */
function loadSync(text: string): unknown {
  try {
    const value = revive(JSON.parse(text) as Json);
    if (!(value instanceof Promise)) return value;
    value.catch(() => {});
  } catch {
    // Not loadable without `load()`'s own checks: not remembered.
  }
  return undefined;
}

const codec: TextCodec = { load: loadSync, dump: (value) => JSON.stringify(value, plusReplacer) };

/**
 * A list that looks like one of objects, by its first item: `stringifyList` writes any list as
 * `JSON.stringify` does, and this only keeps lists of primitives off its item-at-a-time path.
 */
const isListOfObjects = (value: unknown): value is unknown[] =>
  Array.isArray(value) &&
  value.length >= MIN_LIST_ITEMS &&
  typeof (value as { toJSON?: unknown }).toJSON !== "function" &&
  typeof value[0] === "object" &&
  value[0] !== null;

/**
 * `JsonPlusSerializer` with the same format and results, without its overheads: loading without
 * a promise per value, and dumping with plain `JSON.stringify`, which only differs from the stock
 * cycle-safe stringify (a full walk of the value first, a third of checkpoint writing) when the
 * value has a cycle: then it throws and the stock one takes over. A list of objects (a
 * conversation) re-uses the text of the messages it already serialised (`stringifyList`), and
 * its bytes are recorded with its items, so the checkpointer can hand those items out again.
 */
export class FastJsonPlusSerializer extends JsonPlusSerializer {
  readonly #decoder = new TextDecoder();

  protected override _dumps(obj: unknown): Uint8Array {
    let text: string | undefined;
    try {
      if (!isListOfObjects(obj)) text = JSON.stringify(obj, plusReplacer);
    } catch {
      return super._dumps(obj);
    }
    if (text !== undefined) return Buffer.from(text);
    const list = this.listTexts(obj);
    if (!list) return super._dumps(obj);
    const bytes = joinList(list.texts);
    if (list.entries) recordListItems(bytes, { entries: list.entries, texts: list.texts });
    return bytes;
  }

  /**
   * A list's items' texts, not joined (`_dumps` joins them), and what each item was remembered
   * as when every one was: a checkpointer that knows the list's previous version (`held`, its
   * entries) can store the new one as the texts added to it without building the whole list's
   * bytes. Undefined for anything `_dumps` would not write an item at a time, and for a cycle.
   * `unchanged`: the items `held` was made from and their texts, unchanged since (`stringifyList`).
   */
  listTexts(
    value: unknown,
    held?: readonly Known[],
    unchanged?: UncheckedItems,
  ): { texts: Buffer[]; entries?: Known[] } | undefined {
    if (!isListOfObjects(value)) return undefined;
    try {
      const { parts, entries } = stringifyList(value, held, unchanged);
      return { texts: parts, entries };
    } catch {
      return undefined;
    }
  }

  override async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    // The stock one builds a TextDecoder per value; decoding is stateless, so one does.
    if (type === "json" && typeof data !== "string") return this._loads(this.#decoder.decode(data));
    return super.loadsTyped(type, data);
  }

  protected override async _loads(data: string): Promise<unknown> {
    return revive(JSON.parse(data) as Json);
  }
}
