/**
 * Channel values stored as deltas: a channel version's serialised bytes written as the bytes it
 * shares with an earlier version of the same channel (a common prefix and suffix) plus the bytes
 * in between. Appending a message to a conversation then stores the message, not the
 * conversation; a replaced or removed message stores the bytes from it to the end at worst.
 * The delta is on the serialised bytes, so it holds for any serde and any channel type.
 */

import { getHeapStatistics } from "node:v8";
import type { Known } from "./message-texts.ts";
import { joinList, joinTexts } from "./serde.ts";

/** What a delta frame's header holds besides the serde type. */
export interface DeltaHeader {
  type: string;
  /** The blob field (same scope) the delta applies to. */
  base?: string;
  /** Bytes kept from the start of the base… */
  prefix?: number;
  /** …and from its end; the frame's payload goes in between. */
  suffix?: number;
}

/**
 * Deltas between two full copies. Reading a version reads its whole chain in one script call
 * (one HGET per link) and splices it in the process, so the chain is kept short: at most this
 * many deltas, and no more delta bytes in all than the value itself has (a read fetches at
 * most twice the value). A full copy every 256 versions costs 1/256 of the value per version:
 * the full copies of a long conversation were ~40 % of what its cold segments keep at 64, and a
 * read that walks a chain (a process that does not hold the version) takes ~1.5 ms more at 1,000
 * messages for the longest one (docs/design/checkpoint-layout.md).
 */
export const MAX_CHAIN = 256;

/** Per-delta bookkeeping worth a full copy instead: its header. */
const DELTA_OVERHEAD = 48;

/**
 * Values smaller than this are always full copies and never remembered: a delta would save a
 * few dozen bytes, and remembering the small channels of every thread (inputs, branch markers)
 * would fill the cache with entries that cost the heap more than they save Redis.
 */
export const MIN_DELTA_BYTES = 1024;

/**
 * A channel version's bytes: `bytes`, or, for a list put from remembered texts, its items'
 * texts (`itemTexts`), joined when first needed (`bytesOf`). A conversation's next version is
 * found from the texts alone (`appendedDelta`): joining the whole list twice a run made a new
 * ~300 KB buffer each time at 1,000 messages, and V8 runs a full collection per ~64 MB of them.
 */
export interface StoredBytes {
  bytes?: Buffer;
  /** Each item's stored text, which never changes: the bytes are these, joined. */
  itemTexts?: readonly Buffer[];
  /** The bytes' length, known without joining them. */
  size: number;
}

/** The bytes of a version, joined from its texts (and kept) when it had none yet. */
export function bytesOf(version: StoredBytes): Buffer {
  version.bytes ??= joinList(version.itemTexts ?? []);
  return version.bytes;
}

/** A stored channel version this process knows the bytes of, and how far it is from a full copy. */
export interface KnownVersion extends StoredBytes {
  field: string;
  type: string;
  /** Deltas between it and its full copy (0: it is one). */
  depth: number;
  /** Payload bytes of those deltas. */
  chainBytes: number;
  /**
   * What each item was remembered as, when the value is a list of remembered LangChain objects
   * (`message-texts.ts`): their loaded forms are read again, while unchanged, instead of
   * decoding, and the next version's items are checked against them first.
   */
  entries?: readonly Known[];
  /**
   * The entries' loaded forms, in order (set with `entries`): what a hand-out copies. Reading
   * them from the entries, which lie all over the heap, took ~0.26 ms a run at 1,000 messages.
   */
  loadedForms?: readonly object[];
  /**
   * `checked`: the items were checked against their texts by the scope's latest put, and
   * nothing was handed out or written in the scope since; `free`: and then the graph that put
   * it returned, so no code of it can have edited them: the next read hands them out unchecked.
   */
  handout?: "checked" | "free";
  /**
   * The items this version was put from, as the put checked them once no code of its graph could
   * run any more (its last checkpoint was saved): the put of that checkpoint (`until`) takes the
   * ones it finds at the same places without a check, while `handout` is still `checked`.
   */
  checked?: { items: readonly unknown[]; until: string };
}

/** Below this many bytes, ranges are compared a byte at a time. */
const SMALL = 256;

/**
 * Length of the common prefix of `a` and `b`: ranges are halved by `Buffer#compare` (memcmp, no
 * views allocated), so finding where two versions of a long list part compares each byte about
 * once, in a few dozen calls.
 */
export function commonPrefix(a: Buffer, b: Buffer): number {
  let low = 0;
  let high = Math.min(a.length, b.length);
  while (high - low > SMALL) {
    const middle = (low + high) >>> 1;
    if (a.compare(b, low, middle, low, middle) === 0) low = middle;
    else high = middle;
  }
  while (low < high && a[low] === b[low]) low++;
  return low;
}

/** Length of the common suffix of `a` and `b`, at most `limit`, found as `commonPrefix` finds its. */
export function commonSuffix(a: Buffer, b: Buffer, limit: number): number {
  let low = 0;
  let high = limit;
  while (high - low > SMALL) {
    const middle = (low + high) >>> 1;
    if (a.compare(b, b.length - middle, b.length - low, a.length - middle, a.length - low) === 0) low = middle;
    else high = middle;
  }
  while (low < high && a[a.length - low - 1] === b[b.length - low - 1]) low++;
  return low;
}

/**
 * `next` as a delta against `base`, or undefined when a full copy is due: the chain would grow
 * past its bounds, or the delta is not smaller than the value.
 */
export function deltaAgainst(
  base: KnownVersion,
  type: string,
  next: Buffer,
): { header: DeltaHeader; payload: Buffer } | undefined {
  if (base.type !== type || base.depth + 1 > MAX_CHAIN || next.length < MIN_DELTA_BYTES) return undefined;
  const baseBytes = bytesOf(base);
  const prefix = commonPrefix(baseBytes, next);
  const suffix = commonSuffix(baseBytes, next, Math.min(baseBytes.length, next.length) - prefix);
  const payload = next.subarray(prefix, next.length - suffix);
  return withinBounds(base, next.length, payload)
    ? { header: { type, base: base.field, prefix, suffix }, payload }
    : undefined;
}

/** Whether a delta of `payload` for a value of `size` bytes keeps the chain within its bounds. */
const withinBounds = (base: KnownVersion, size: number, payload: Buffer) =>
  payload.length + DELTA_OVERHEAD < size && base.chainBytes + payload.length <= size;

/**
 * A JSON list that starts with all of `base`'s items (the very same texts) as a delta against
 * it, found without the list's bytes: the new items' texts after the base's last one. The
 * delta `deltaAgainst` finds for those bytes (the base but its closing bracket, the new items,
 * the bracket). Undefined when the list does not extend the base, or a full copy is due.
 */
export function appendedDelta(
  base: KnownVersion,
  texts: readonly Buffer[],
): { header: DeltaHeader; payload: Buffer; size: number } | undefined {
  const held = base.itemTexts;
  if (!held || base.type !== "json" || base.depth + 1 > MAX_CHAIN || texts.length < held.length) return undefined;
  for (let i = 0; i < held.length; i++) if (texts[i] !== held[i]) return undefined;
  // Each new text after a comma: the base's closing bracket stays its suffix.
  const payload = joinTexts(texts.slice(held.length), texts.length > held.length ? "," : "", "");
  const size = base.size + payload.length;
  if (size < MIN_DELTA_BYTES || !withinBounds(base, size, payload)) return undefined;
  return { header: { type: "json", base: base.field, prefix: base.size - 1, suffix: 1 }, payload, size };
}

/**
 * The value a chain rebuilds, given oldest (the full copy) first. Slices are spliced as views,
 * without copying, and joined once: a chain of k deltas costs O(size + k²), not O(size × k).
 */
export function applyChain(full: Buffer, deltas: { header: DeltaHeader; payload: Buffer }[]): Buffer {
  let pieces = [full];
  let length = full.length;
  for (const { header, payload } of deltas) {
    const prefix = header.prefix ?? 0;
    const suffix = header.suffix ?? 0;
    pieces = [...slice(pieces, 0, prefix), payload, ...slice(pieces, length - suffix, length)];
    length = prefix + payload.length + suffix;
  }
  return pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces, length);
}

/** The views covering bytes [start, end) of the concatenation of `pieces`. */
function slice(pieces: Buffer[], start: number, end: number): Buffer[] {
  const result: Buffer[] = [];
  let offset = 0;
  for (const piece of pieces) {
    const from = Math.max(start - offset, 0);
    const to = Math.min(end - offset, piece.length);
    if (from < to) result.push(from === 0 && to === piece.length ? piece : piece.subarray(from, to));
    offset += piece.length;
    if (offset >= end) break;
  }
  return result;
}

/**
 * Heap that a version's items keep beyond its bytes: the objects, and per object its text and a
 * copy of its fields (`message-texts.ts`). Measured: ~7 bytes of heap per serialised byte for a
 * conversation of chat messages (2.2 MB for 1,000 messages of 318 KB).
 */
const itemsHeap = (version: KnownVersion) => version.size * 7;

/**
 * The items' budget: a sixteenth of V8's heap limit (which Node sizes from the memory of the
 * machine or the container), at least 64 MiB. A fixed 64 MiB held ~29 conversations of 1,000
 * messages: a process serving a few more of them round-robin missed on every read.
 */
const DEFAULT_ITEMS_HEAP = Math.max(64 * 2 ** 20, Math.floor(getHeapStatistics().heap_size_limit / 16));

/**
 * The latest version of each (scope, channel) this process wrote or read, so the next version is
 * written as a delta against it without reading it back. Bounded in bytes, least recently used
 * out first; a miss only means a full copy is written. Values below `MIN_DELTA_BYTES` are not kept.
 * Their items (decoded lists) have a budget of their own, by estimated heap: past it the least
 * recently used versions keep their bytes only, and a read of them loads the bytes.
 */
export class KnownVersions {
  readonly #entries = new Map<string, KnownVersion>();
  /** The same entries by scope, then channel: what a read of the scope can skip fetching. */
  readonly #scopes = new Map<string, Map<string, KnownVersion>>();
  readonly #maxBytes: number;
  readonly #maxEntries: number;
  readonly #maxItemsHeap: number;
  #bytes = 0;
  /** The entries whose items are held, and their estimated heap (`itemsHeap`). */
  readonly #withItems = new Set<KnownVersion>();
  #itemsHeap = 0;
  /**
   * Full copies that chains of the scope's versions rest on, by scope, then field; bytes only,
   * least recently used out first, within half of `maxBytes`. A read of an older checkpoint
   * (history, state at a checkpoint) stops its chain at one (`inScope`) instead of fetching and
   * inflating it again: a page of ten states at 1,000 messages inflated the same ~300 KB ten times.
   */
  readonly #fullCopies = new Map<string, Map<string, KnownVersion>>();
  /** The same copies, least recently used first, with their scopes. */
  readonly #fullCopyOrder = new Map<KnownVersion, string>();
  #fullCopyBytes = 0;

  constructor(maxBytes = 32 * 2 ** 20, maxEntries = 4096, maxItemsHeap = DEFAULT_ITEMS_HEAP) {
    this.#maxBytes = maxBytes;
    this.#maxEntries = maxEntries;
    this.#maxItemsHeap = maxItemsHeap;
  }

  get(scope: string, channel: string): KnownVersion | undefined {
    const key = `${scope}\0${channel}`;
    const entry = this.#entries.get(key);
    if (entry) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    return entry;
  }

  set(scope: string, channel: string, version: KnownVersion): void {
    this.delete(scope, channel);
    if (version.size < MIN_DELTA_BYTES || version.size > this.#maxBytes / 4) return;
    this.#entries.set(`${scope}\0${channel}`, version);
    let channels = this.#scopes.get(scope);
    if (!channels) this.#scopes.set(scope, (channels = new Map()));
    channels.set(channel, version);
    this.#bytes += version.size;
    if (version.entries) {
      this.#withItems.add(version);
      this.#itemsHeap += itemsHeap(version);
    }
    for (const key of this.#entries.keys()) {
      if (this.#bytes <= this.#maxBytes && this.#entries.size <= this.#maxEntries) break;
      // A scope is JSON (`scopeOf`), which has no raw NUL.
      const split = key.indexOf("\0");
      this.delete(key.slice(0, split), key.slice(split + 1));
    }
    // Over the items' budget, the least recently used entries keep their bytes only.
    for (const entry of this.#entries.values()) {
      if (this.#itemsHeap <= this.#maxItemsHeap) break;
      this.dropItems(entry);
    }
  }

  /** Forgets a version's items (over budget, or changed since): it is loaded from its bytes. */
  dropItems(version: KnownVersion): void {
    bytesOf(version);
    if (this.#withItems.delete(version)) this.#itemsHeap -= itemsHeap(version);
    delete version.entries;
    delete version.loadedForms;
    delete version.itemTexts;
    delete version.checked;
  }

  delete(scope: string, channel: string): void {
    const key = `${scope}\0${channel}`;
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.size;
    if (this.#withItems.delete(entry)) this.#itemsHeap -= itemsHeap(entry);
    const channels = this.#scopes.get(scope);
    channels?.delete(channel);
    if (channels?.size === 0) this.#scopes.delete(scope);
  }

  /** A graph's code may have run in `scope` since its latest put: its items are checked when next read. */
  codeRan(scope: string): void {
    for (const version of this.#scopes.get(scope)?.values() ?? []) delete version.handout;
  }

  /** The graph that wrote `scope` returned: items checked by its latest put need no check on their next read. */
  graphReturned(scope: string): void {
    for (const version of this.#scopes.get(scope)?.values() ?? []) {
      if (version.handout === "checked") version.handout = "free";
    }
  }

  /**
   * The versions known in a scope, by blob field: the latest of each channel first (a read takes
   * the first of a channel as the version it holds), then the full copies kept.
   */
  inScope(scope: string): Map<string, KnownVersion> {
    const byField = new Map<string, KnownVersion>();
    for (const version of this.#scopes.get(scope)?.values() ?? []) byField.set(version.field, version);
    for (const version of this.#fullCopies.get(scope)?.values() ?? []) {
      if (!byField.has(version.field)) byField.set(version.field, version);
    }
    return byField;
  }

  /** Keeps the bytes of a full copy (`depth` 0) that later versions are deltas on; its items are not kept. */
  keepFullCopy(scope: string, version: KnownVersion): void {
    if (version.depth !== 0 || version.size > this.#maxBytes / 8) return;
    let copies = this.#fullCopies.get(scope);
    const known = copies?.get(version.field);
    if (known) {
      this.#fullCopyOrder.delete(known);
      this.#fullCopyOrder.set(known, scope);
      return;
    }
    if (!copies) this.#fullCopies.set(scope, (copies = new Map()));
    const { field, type, size } = version;
    const copy: KnownVersion = { field, type, bytes: bytesOf(version), size, depth: 0, chainBytes: 0 };
    copies.set(field, copy);
    this.#fullCopyOrder.set(copy, scope);
    this.#fullCopyBytes += size;
    for (const [oldest, oldestScope] of this.#fullCopyOrder) {
      if (this.#fullCopyBytes <= this.#maxBytes / 2) break;
      this.#fullCopyOrder.delete(oldest);
      this.#fullCopyBytes -= oldest.size;
      const scopeCopies = this.#fullCopies.get(oldestScope);
      scopeCopies?.delete(oldest.field);
      if (scopeCopies?.size === 0) this.#fullCopies.delete(oldestScope);
    }
  }
}
