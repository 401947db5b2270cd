/**
 * The serialised text of each LangChain object (messages) in a list the serde wrote, remembered
 * per object, so a conversation's next checkpoint serialises only the messages it added: a
 * message costs about 18 µs to serialise (`Serializable.toJSON` maps and escapes every key) and a
 * run used to serialise all of them twice. A remembered text is used only while the object is
 * unchanged: a copy of its data is kept beside the text and compared before each use, so a graph
 * that edits a message in place (`message.content = …`, or deeper) gets it serialised again, as
 * before. That copy is taken from a load of the text, and the loaded object is kept too: the
 * checkpointer hands it out (while it is unchanged) instead of loading the list again. Objects holding anything but plain data (class instances, dates, buffers) below their
 * own fields are never remembered.
 */

/** A copy of plain data: primitives as they are, lists as lists of copies, objects as `Fields`. */
type Copy = null | boolean | number | string | undefined | Copy[] | Fields | SameAsField;

/** An object's own enumerable keys, in order, and copies of their values. */
class Fields {
  readonly keys: readonly string[];
  readonly values: Copy[];
  constructor(keys: readonly string[], values: Copy[]) {
    this.keys = keys;
    this.values = values;
  }
}

/**
 * LangChain objects keep their constructor arguments (`lc_kwargs`) beside their fields, mostly
 * the very same objects: such an entry is unchanged when it still is its field (compared on its
 * own), else when it still holds the copied data.
 */
class SameAsField {
  readonly copy: Copy;
  constructor(copy: Copy) {
    this.copy = copy;
  }
}

/**
 * Copies shared by every remembered message: most hold empty lists and objects, and their keys
 * come in a few orders. Shared, a remembered chat message takes a third less heap (7 bytes per
 * serialised byte instead of 10.5), and its check and every garbage collection read fewer objects.
 */
const EMPTY_LIST: Copy[] = Object.freeze([]) as unknown as Copy[];
const EMPTY_FIELDS = new Fields(Object.freeze([]), Object.freeze([]) as unknown as Copy[]);
const SAME_AS_EMPTY_LIST = new SameAsField(EMPTY_LIST);
const SAME_AS_EMPTY_FIELDS = new SameAsField(EMPTY_FIELDS);
const keyOrders = new Map<string, readonly string[]>();
const MAX_KEY_ORDERS = 1024;

/** `keys` as a list shared with every earlier copy of the same keys in the same order. */
function sharedKeys(keys: string[]): readonly string[] {
  const order = JSON.stringify(keys);
  const shared = keyOrders.get(order);
  if (shared) return shared;
  if (keyOrders.size < MAX_KEY_ORDERS) keyOrders.set(order, Object.freeze(keys));
  return keys;
}

interface Remembered {
  /** The object's serialised text, as UTF-8. */
  bytes: Buffer;
  /** The object's class when it was remembered. */
  type: unknown;
  /** The object's own fields, as they were when `bytes` were made. */
  fields: Fields;
  /** What loading `bytes` built (the object itself when it was loaded). */
  loaded: object;
}

/** What a remembered object stands for while it is unchanged. */
export interface Known {
  bytes: Buffer;
  loaded: object;
}

/** The serde's own load and dump of one value's text. */
export interface TextCodec {
  load(text: string): unknown;
  dump(value: unknown): string | undefined;
}

const remembered = new WeakMap<object, Remembered>();

/** A serialised list of remembered objects: their loaded forms and their texts, keyed by the list's bytes. */
export interface ListItems {
  /** The loaded forms of the items (`itemsOf`). */
  items: readonly object[];
  /** Each item's serialised text: the list's bytes are these, joined. */
  texts: readonly Buffer[];
}

const listItems = new WeakMap<Uint8Array, ListItems>();

/** Nesting beyond this is not copied (the object is then never remembered). */
const MAX_DEPTH = 32;

const isPlainObject = (value: object) => Object.getPrototypeOf(value) === Object.prototype;

/** A copy of plain data, or undefined when there is anything else in it (a date, a class instance). */
function copyOf(value: unknown, depth: number): { value: Copy } | undefined {
  if (value === null || value === undefined) return { value };
  const kind = typeof value;
  if (kind === "string" || kind === "number" || kind === "boolean") return { value: value as Copy };
  if (kind !== "object" || depth > MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    if (value.length === 0) return { value: EMPTY_LIST };
    const items: Copy[] = [];
    for (let i = 0; i < value.length; i++) {
      const copied = copyOf(value[i], depth + 1);
      if (!copied) return undefined;
      items.push(copied.value);
    }
    return { value: items };
  }
  return isPlainObject(value as object) ? fieldsOf(value as Record<string, unknown>, depth) : undefined;
}

/** An own enumerable field: one that `sameFields` compares. */
const isOwnField = (value: object, key: string) => Object.prototype.propertyIsEnumerable.call(value, key);

/** `owner`: the LangChain object whose `lc_kwargs` these are. */
function fieldsOf(value: Record<string, unknown>, depth: number, owner?: Record<string, unknown>) {
  const keys: string[] = [];
  const values: Copy[] = [];
  for (const key in value) {
    const item = value[key];
    let copied: { value: Copy } | undefined;
    copied = key === "lc_kwargs" && depth === 0 ? kwargsOf(item, value) : copyOf(item, depth + 1);
    if (!copied) return undefined;
    if (owner && typeof item === "object" && item !== null && owner[key] === item && isOwnField(owner, key))
      copied = { value: sameAsField(copied.value) };
    keys.push(key);
    values.push(copied.value);
  }
  return { value: keys.length === 0 ? EMPTY_FIELDS : new Fields(sharedKeys(keys), values) };
}

const sameAsField = (copy: Copy) =>
  copy === EMPTY_LIST ? SAME_AS_EMPTY_LIST : copy === EMPTY_FIELDS ? SAME_AS_EMPTY_FIELDS : new SameAsField(copy);

const kwargsOf = (kwargs: unknown, owner: Record<string, unknown>) =>
  typeof kwargs === "object" && kwargs !== null && isPlainObject(kwargs)
    ? fieldsOf(kwargs as Record<string, unknown>, 1, owner)
    : undefined;

/** Whether `live` still holds the data `copy` was taken from. */
function same(live: unknown, copy: Copy): boolean {
  if (live === copy) return true;
  if (typeof live !== "object" || live === null) return false;
  if (copy instanceof Fields) return !Array.isArray(live) && isPlainObject(live) && sameFields(live, copy);
  if (!Array.isArray(copy) || !Array.isArray(live) || live.length !== copy.length) return false;
  for (let i = 0; i < copy.length; i++) if (!same(live[i], copy[i])) return false;
  return true;
}

/** Same keys in the same order, same values; `owner` as in `fieldsOf`. */
function sameFields(live: object, copy: Fields, owner?: Record<string, unknown>): boolean {
  const { keys, values } = copy;
  let n = 0;
  for (const key in live) {
    if (keys[n] !== key) return false;
    const value = (live as Record<string, unknown>)[key];
    const expected = values[n] as Copy;
    if (expected instanceof SameAsField) {
      if (owner?.[key] !== value && !same(value, expected.copy)) return false;
    } else if (expected instanceof Fields && key === "lc_kwargs" && !owner) {
      const kwargs = value as object;
      if (
        typeof kwargs !== "object" ||
        kwargs === null ||
        !sameFields(kwargs, expected, live as Record<string, unknown>)
      )
        return false;
    } else if (!same(value, expected)) return false;
    n++;
  }
  return n === keys.length;
}

/** A LangChain serialisable object: its JSON comes from `toJSON()` over its own fields. */
const isSerializable = (item: object) =>
  (item as { lc_serializable?: unknown }).lc_serializable === true &&
  typeof (item as { lc_kwargs?: unknown }).lc_kwargs === "object" &&
  typeof (item as { toJSON?: unknown }).toJSON === "function";

/** The bytes `item` was serialised to and its loaded form, while it is unchanged since. */
export function known(item: object): Known | undefined {
  const entry = remembered.get(item);
  if (!entry) return undefined;
  if (item.constructor === entry.type && sameFields(item, entry.fields)) return entry;
  remembered.delete(item);
  return undefined;
}

/**
 * Remembers what a LangChain object was just serialised to, when loading that text builds an
 * object with the same fields, and that object too (its "loaded form"). An object with a field
 * its text does not carry (one set outside the constructor's arguments, which `toJSON` writes)
 * is not remembered. A graph's messages are often of its own copy of the LangChain classes
 * (graphs load their own modules): the loaded form is of the server's, as a load gives, and is
 * remembered only when it serialises to the same text. False when nothing was remembered.
 */
export function rememberText(item: object, text: string, codec: TextCodec): boolean {
  if (!isSerializable(item)) return false;
  const loaded = codec.load(text);
  if (typeof loaded !== "object" || loaded === null || loaded.constructor.name !== item.constructor.name) return false;
  const fields = fieldsOf(loaded as Record<string, unknown>, 0);
  if (!fields || !sameFields(item, fields.value)) return false;
  if (loaded.constructor !== item.constructor && codec.dump(loaded) !== text) return false;
  const bytes = Buffer.from(text);
  remembered.set(item, { bytes, type: item.constructor, fields: fields.value, loaded });
  remembered.set(loaded, { bytes, type: loaded.constructor, fields: fields.value, loaded });
  return true;
}

/** Records that loading `bytes` gives a list of `items` (loaded forms of remembered objects, with their texts). */
export function recordListItems(bytes: Uint8Array, items: ListItems): void {
  listItems.set(bytes, items);
}

/** The items `bytes` were serialised from and their texts, when all of them were remembered. */
export function itemsOf(bytes: Uint8Array): ListItems | undefined {
  return listItems.get(bytes);
}

/**
 * The items again, as a new list, when every one of them is still what loading its text built
 * (so the list is what loading the bytes gives); undefined when any changed since.
 */
export function unchangedItems(items: readonly object[]): object[] | undefined {
  for (const item of items) if (known(item) === undefined) return undefined;
  return [...items];
}

const COMMA = 0x2c;
const CLOSE = 0x5d;

/**
 * The leading items of the list `bytes` serialises that are `held`'s leading items (remembered
 * objects, unchanged since): their loaded forms, and where the rest of the list starts in
 * `bytes` (at the closing bracket when every item was one of them). A conversation's versions
 * share their start: an older checkpoint's messages (history) or a newer one another replica
 * wrote are mostly the ones this process holds, and only the others need loading.
 */
export function sharedLeadingItems(bytes: Uint8Array, held: readonly object[]): { items: object[]; rest: number } {
  const items: object[] = [];
  let offset = 1;
  for (const item of held) {
    const entry = known(item);
    if (!entry) break;
    const end = offset + entry.bytes.length;
    const next = bytes[end];
    if ((next !== COMMA && next !== CLOSE) || entry.bytes.compare(bytes, offset, end) !== 0) break;
    items.push(entry.loaded);
    offset = end + 1;
    if (next === CLOSE) return { items, rest: end };
  }
  return { items, rest: offset };
}
