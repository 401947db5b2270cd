/**
 * The serialised text of each LangChain object (messages) in a list the serde wrote, remembered
 * per object, so a conversation's next checkpoint serialises only the messages it added: a
 * message costs about 18 µs to serialise (`Serializable.toJSON` maps and escapes every key) and a
 * run used to serialise all of them twice. A remembered text is used only while the object is
 * unchanged: a copy of its data is kept beside the text and compared before each use, so a graph
 * that edits a message in place (`message.content = …`, or deeper) gets it serialised again, as
 * before. That copy is taken from a load of the text, and the loaded object is kept too: the
 * checkpointer hands it out (while it is unchanged) instead of loading the list again. Objects
 * holding anything but plain data (class instances, dates, buffers) below their own fields are
 * never remembered. The copies and their checks are `shapes.ts`.
 */

import type { CheckedList } from "../storage/types.ts";
import { copyFields, type FieldsCopy, holdsCopy } from "./shapes.ts";

/**
 * What a remembered object stands for while it is unchanged: its text, and what loading the
 * text builds; with the copy of the object's own fields as they were when `bytes` were made
 * (one object less to read per check) and its class then.
 */
export interface Known extends FieldsCopy {
  /** The object's serialised text, as UTF-8. */
  readonly bytes: Buffer;
  readonly type: unknown;
  /** What loading `bytes` built (the object itself when it was loaded). */
  readonly loaded: object;
}

/** The serde's own load and dump of one value's text. */
export interface TextCodec {
  load(text: string): unknown;
  dump(value: unknown): string | undefined;
}

const remembered = new WeakMap<object, Known>();

/** A serialised list of remembered objects, keyed by the list's bytes. */
export interface ListItems {
  /** What each item was remembered as: its text and loaded form (`itemsOf`). */
  entries: readonly Known[];
  /** Each item's serialised text (`entries[i].bytes`): the list's bytes are these, joined. */
  texts: readonly Buffer[];
}

const listItems = new WeakMap<Uint8Array, ListItems>();

/** A LangChain serialisable object: its JSON comes from `toJSON()` over its own fields. */
const isSerializable = (item: object) =>
  (item as { lc_serializable?: unknown }).lc_serializable === true &&
  typeof (item as { lc_kwargs?: unknown }).lc_kwargs === "object" &&
  typeof (item as { toJSON?: unknown }).toJSON === "function";

/** The bytes `item` was serialised to and its loaded form, while it is unchanged since. */
export function known(item: object): Known | undefined {
  const entry = remembered.get(item);
  if (!entry) return undefined;
  if (holdsKnown(item, entry)) return entry;
  remembered.delete(item);
  return undefined;
}

/**
 * The remembered text of each of `items` while every one is unchanged since (checked as before
 * a put); undefined as soon as one is not remembered or changed. Nothing is serialised or
 * remembered here: a list loaded from bytes by a process that never put it stays unremembered.
 * `checked`: a list of the same answer whose items were found unchanged moments ago; the
 * leading items that are its very objects take its texts without a second check.
 */
export function rememberedTexts(items: readonly unknown[], checked?: CheckedList): Buffer[] | undefined {
  const texts: Buffer[] = new Array(items.length);
  let i = 0;
  if (checked) {
    const shared = Math.min(items.length, checked.items.length);
    for (; i < shared && items[i] === checked.items[i]; i++) texts[i] = checked.texts[i] as Buffer;
  }
  for (; i < items.length; i++) {
    const item = items[i];
    const entry = typeof item === "object" && item !== null ? known(item) : undefined;
    if (!entry) return undefined;
    texts[i] = entry.bytes;
  }
  return texts;
}

/**
 * Whether `item` holds what `entry` was remembered from (the same class, the same fields), so
 * `entry.bytes` are its text: the check `known` makes, without looking the entry up. A list's
 * previous version keeps its items' entries in order, and a conversation's next version is
 * mostly the same items at the same places: a table lookup per item was a third of a check.
 */
export const holdsKnown = (item: object, entry: Known) => item.constructor === entry.type && holdsCopy(item, entry);

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
  const fields = copyFields(loaded);
  if (!fields || !holdsCopy(item, fields)) return false;
  if (loaded.constructor !== item.constructor && codec.dump(loaded) !== text) return false;
  const bytes = Buffer.from(text);
  const { shape, leaves } = fields;
  remembered.set(item, { bytes, type: item.constructor, shape, leaves, loaded });
  remembered.set(loaded, { bytes, type: loaded.constructor, shape, leaves, loaded });
  return true;
}

const COMMA = 0x2c;
const CLOSE = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Where each item of the JSON list `bytes` ends (at its comma, or at the closing bracket), for
 * the items from `from` (an item's first byte, or the closing bracket) on; undefined for
 * anything else than a list of objects written without spaces, as the serde writes lists.
 */
function itemEnds(bytes: Buffer, from: number): number[] | undefined {
  const ends: number[] = [];
  if (bytes[from] === CLOSE) return from === bytes.length - 1 ? ends : undefined;
  let depth = 0;
  let inString = false;
  for (let i = from; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth++;
    else if (depth > 0 && (byte === CLOSE_BRACE || byte === CLOSE)) depth--;
    else if (depth === 0) {
      if (byte !== COMMA && byte !== CLOSE) return undefined;
      ends.push(i);
      if (byte === CLOSE) return i === bytes.length - 1 ? ends : undefined;
      if (bytes[i + 1] !== OPEN_BRACE) return undefined;
    }
  }
  return undefined;
}

/**
 * Remembers the items of a list a read just loaded from `bytes`, each with its span of the
 * bytes as its text (copied: a view would keep the whole list's bytes alive for each message),
 * after the `leading` entries the read took from a version it held: their entries, as a put
 * would give them, so a replica that reads a conversation (answers runs another replica ran)
 * loads, checks and converts only what was added since its last read. Undefined, and nothing
 * more remembered, as soon as an item is no LangChain object of plain data.
 */
export function rememberLoadedList(
  bytes: Buffer,
  from: number,
  items: readonly unknown[],
  leading: readonly Known[],
): Known[] | undefined {
  for (let i = leading.length; i < items.length; i++) {
    const item = items[i];
    if (typeof item !== "object" || item === null || !isSerializable(item)) return undefined;
  }
  const ends = itemEnds(bytes, from);
  if (!ends || leading.length + ends.length !== items.length) return undefined;
  const entries = [...leading];
  let start = from;
  for (const end of ends) {
    const item = items[entries.length] as object;
    const fields = copyFields(item);
    if (!fields) return undefined;
    const entry = { bytes: Buffer.from(bytes.subarray(start, end)), type: item.constructor, ...fields, loaded: item };
    remembered.set(item, entry);
    entries.push(entry);
    start = end + 1;
  }
  return entries;
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
 * Whether an entry's loaded form still is what loading its text builds. The entry may be that of
 * another object with the same text (a graph's own message, whose loaded form is of the
 * server's classes): then the loaded form's own entry, with the same text, is checked.
 */
const loadedUnchanged = (entry: Known) => holdsKnown(entry.loaded, entry) || known(entry.loaded)?.bytes === entry.bytes;

/**
 * The entries' loaded forms, as a new list, when every one of them is still what loading its
 * text built (so the list is what loading the bytes gives); undefined when any changed since.
 */
export function unchangedItems(entries: readonly Known[]): object[] | undefined {
  for (const entry of entries) if (!loadedUnchanged(entry)) return undefined;
  return entries.map((entry) => entry.loaded);
}

/**
 * The leading items of the list `bytes` serialises that are the loaded forms of `held`'s leading
 * entries (unchanged since): those loaded forms, and where the rest of the list starts in
 * `bytes` (at the closing bracket when every item was one of them). A conversation's versions
 * share their start: an older checkpoint's messages (history) or a newer one another replica
 * wrote are mostly the ones this process holds, and only the others need loading.
 */
export function sharedLeadingItems(bytes: Uint8Array, held: readonly Known[]): { items: object[]; rest: number } {
  const items: object[] = [];
  let offset = 1;
  for (const entry of held) {
    if (!loadedUnchanged(entry)) break;
    const end = offset + entry.bytes.length;
    const next = bytes[end];
    if ((next !== COMMA && next !== CLOSE) || entry.bytes.compare(bytes, offset, end) !== 0) break;
    items.push(entry.loaded);
    offset = end + 1;
    if (next === CLOSE) return { items, rest: end };
  }
  return { items, rest: offset };
}
