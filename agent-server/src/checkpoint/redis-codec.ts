import { compareWritesSortKeys, type SerializerProtocol, writesSortKey } from "@langchain/langgraph-checkpoint";
import {
  appendedDelta,
  applyChain,
  bytesOf,
  deltaAgainst,
  type KnownVersion,
  type KnownVersions,
  MIN_DELTA_BYTES,
  type StoredBytes,
} from "./deltas.ts";
import { itemsOf, type Known, rememberLoadedList, sharedLeadingItems, unchangedItems } from "./message-texts.ts";
import { blobField, channelOfBlobField, encodeFrame, heldBaseOf, parseWriteField } from "./redis-layout.ts";
import { blobFrame, decodeBlobFrame, decodeWriteFrame, LARGE } from "./redis-pack.ts";
import { FastJsonPlusSerializer, joinList } from "./serde.ts";

/** Encoding and decoding of what the Redis checkpointer stores: channel versions (as deltas) and pending writes. */

/** One channel version to store: its blob field, its bytes (or its items' texts) and the frame written for it. */
export interface BlobWrite extends StoredBytes {
  channel: string;
  field: string;
  type: string;
  frame: Buffer;
  /** The known version the frame is a delta against, and the delta's payload bytes. */
  base?: KnownVersion;
  deltaBytes?: number;
  /** What a list value's items were remembered as (`KnownVersion.entries`). */
  entries?: readonly Known[];
  /** The items as checked once no code of the graph could run any more (`KnownVersion.checked`). */
  checked?: KnownVersion["checked"];
}

/**
 * The checkpoint a put stores, and the last checkpoint its graph saved when that was known as
 * the put began (`RedisCheckpointer.graphFinished`): after it, no code of the graph runs.
 */
export interface PutCheckpoint {
  id: string;
  graphFinishedAt?: string;
}

export interface WriteHeader {
  channel: string;
  type: string;
  task_path: string;
  /** The run that stored the write, so rolling the run back removes it. */
  run_id?: string;
}

export interface StoredWrite {
  taskId: string;
  idx: number;
  header: WriteHeader;
  payload: Buffer;
}

const EMPTY = Buffer.alloc(0);

/**
 * A channel's new version as a frame: a delta on the version this process knows when that is
 * smaller. A list's items are checked against what they were remembered as, except the ones a
 * put of the same run checked after its graph's last step (`KnownVersion.checked`): no code
 * can have edited those since, and nothing was handed out or written in the scope meanwhile.
 */
export async function encodeBlob(
  serde: SerializerProtocol,
  known: KnownVersions,
  scope: string,
  channel: string,
  version: number | string,
  values: Record<string, unknown>,
  put: PutCheckpoint,
): Promise<BlobWrite> {
  const field = blobField(channel, version);
  if (!(channel in values)) {
    return { channel, field, type: "empty", bytes: EMPTY, size: 0, frame: encodeFrame({ type: "empty" }, EMPTY) };
  }
  const base = known.get(scope, channel);
  const value = values[channel];
  const unchanged =
    base?.handout === "checked" && base.checked?.until === put.id && base.itemTexts
      ? { items: base.checked.items, texts: base.itemTexts }
      : undefined;
  // A conversation that only added messages to the version this process put last: its delta
  // comes from the texts, and its whole bytes are joined only if something needs them.
  const list =
    base?.itemTexts &&
    base.field !== field &&
    serde instanceof FastJsonPlusSerializer &&
    serde.listTexts(value, base.entries, unchanged);
  // Checked after the graph's last step: the put of that step's checkpoint needs no second check.
  const checked =
    list && list.entries && put.graphFinishedAt !== undefined && put.graphFinishedAt !== put.id
      ? { items: (value as unknown[]).slice(), until: put.graphFinishedAt }
      : undefined;
  const appended = base && list ? appendedDelta(base, list.texts) : undefined;
  if (base && list && appended) {
    const { header, payload, size } = appended;
    const frame = blobFrame(header, payload);
    return {
      channel,
      field,
      type: "json",
      itemTexts: list.texts,
      size,
      entries: list.entries,
      checked,
      base,
      deltaBytes: payload.length,
      frame,
    };
  }
  const [blobType, serializedValue] = list ? ["json", joinList(list.texts)] : await serde.dumpsTyped(value);
  const bytes = Buffer.from(serializedValue.buffer, serializedValue.byteOffset, serializedValue.byteLength);
  const listed = list ? undefined : itemsOf(serializedValue);
  const entries = list ? list.entries : listed?.entries;
  const itemTexts = list ? entries && list.texts : listed?.texts;
  const stored = { channel, field, type: blobType, bytes, size: bytes.length, entries, itemTexts, checked };
  const delta = base && base.field !== field ? deltaAgainst(base, blobType, bytes) : undefined;
  return delta
    ? { ...stored, base, deltaBytes: delta.payload.length, frame: blobFrame(delta.header, delta.payload) }
    : { ...stored, frame: blobFrame({ type: blobType }, bytes) };
}

/** Deltas whose base was removed since this process saw it are sent again as full copies. */
export function asFullCopies(blobs: BlobWrite[], missing: Set<string>): void {
  for (const blob of blobs) {
    if (!missing.has(blob.field)) continue;
    blob.frame = blobFrame({ type: blob.type }, bytesOf(blob));
    delete blob.base;
    delete blob.deltaBytes;
  }
}

/** The versions just stored become the bases of this process's next deltas. */
export function rememberStored(known: KnownVersions, scope: string, blobs: BlobWrite[]): void {
  // A put follows a step's code: the versions it did not check again may have been edited since.
  known.codeRan(scope);
  for (const { channel, field, type, bytes, size, base, deltaBytes = 0, entries, itemTexts, checked } of blobs) {
    if (type === "empty") {
      known.delete(scope, channel);
      continue;
    }
    const chain = base
      ? { depth: base.depth + 1, chainBytes: base.chainBytes + deltaBytes }
      : { depth: 0, chainBytes: 0 };
    const handout = entries ? ("checked" as const) : undefined;
    const loadedForms = entries && loadedFormsOf(entries, base);
    const stored = { field, type, bytes, size, ...chain, entries, loadedForms, itemTexts, handout, checked };
    known.set(scope, channel, stored);
    // The full copy this version's chain rests on, for reads of the versions between them.
    if (base) keepChainRoot(known, scope, base);
  }
}

/**
 * The loaded forms of `entries`, in order: `base`'s own where an entry is the one at the same
 * place in `base` (a conversation's next version shares its start), so only new ones are read.
 */
function loadedFormsOf(entries: readonly Known[], base: KnownVersion | undefined): object[] {
  const held = (base?.loadedForms && base.entries) ?? [];
  const shared = Math.min(entries.length, held.length);
  let i = 0;
  while (i < shared && held[i] === entries[i]) i++;
  const forms = base?.loadedForms?.slice(0, i) ?? [];
  for (; i < entries.length; i++) forms.push((entries[i] as Known).loaded);
  return forms;
}

/** What `loadTupleScript` sends for a blob the reader said it has (`KnownVersions.inScope`). */
const isSkipped = (chain: Buffer[] | undefined) => chain?.length === 1 && chain[0]?.length === 0;

/**
 * A version this process has: its items again while they are unchanged, else its bytes
 * decoded. Items no code can have edited since they were checked (`KnownVersion.handout`)
 * are handed out once without a check; whoever gets them may edit them.
 */
function knownValue(serde: SerializerProtocol, known: KnownVersions, version: KnownVersion): unknown {
  const free = version.handout === "free";
  delete version.handout;
  if (free && version.loadedForms) return [...version.loadedForms];
  const items = version.entries && unchangedItems(version.entries);
  // Changed in place since (a graph edited a message): the bytes hold what was stored.
  if (!items) known.dropItems(version);
  return items ?? serde.loadsTyped(version.type, bytesOf(version));
}

/** A version with no value (missing, or a channel left empty). */
const ABSENT = Symbol("absent");

/** Fewer shared items than this, and the whole list is loaded as it is. */
const MIN_SHARED_ITEMS = 8;
const OPEN = Buffer.from("[");

/**
 * A value loaded from its bytes; a list takes the leading items it shares with `held` (a
 * version of the same channel this process has, with its items) instead of loading them again:
 * what loading the whole bytes gives, for the cost of loading the others. A list of LangChain
 * objects comes with its items' entries (`rememberLoadedList`), for the next read to share.
 */
async function loadSharing(
  serde: SerializerProtocol,
  type: string,
  bytes: Buffer,
  held: KnownVersion | undefined,
): Promise<{ value: unknown; entries?: Known[] }> {
  if (type !== "json" || bytes[0] !== 0x5b) return { value: await serde.loadsTyped(type, bytes) };
  const shared = held?.entries ? sharedLeadingItems(bytes, held.entries) : { items: [], rest: 1 };
  const leading = shared.items.length < MIN_SHARED_ITEMS ? 0 : shared.items.length;
  // Its items go to whoever reads this version, who may edit them: the held version's next
  // hand-out checks them (`KnownVersion.handout`).
  if (held && leading > 0) delete held.handout;
  const rest = leading === 0 ? 1 : shared.rest;
  const remaining = rest === 1 ? bytes : Buffer.concat([OPEN, bytes.subarray(rest)]);
  const others = rest === bytes.length - 1 ? [] : await serde.loadsTyped(type, remaining);
  if (!Array.isArray(others)) return { value: others };
  const value = leading === 0 ? others : [...shared.items, ...others];
  // A list too small to be kept as a delta base (`KnownVersions`) is loaded whole next time anyway.
  const kept = bytes.length >= MIN_DELTA_BYTES;
  const entries = kept ? rememberLoadedList(bytes, rest, value, held?.entries?.slice(0, leading) ?? []) : undefined;
  return { value, entries };
}

/**
 * Keeps `root` when it is a full copy later versions' chains rest on (`KnownVersions.keepFullCopy`):
 * only one large enough to be stored deflated; a smaller one costs little to fetch.
 */
function keepChainRoot(known: KnownVersions, scope: string, root: KnownVersion): void {
  if (root.depth === 0 && root.size >= LARGE) known.keepFullCopy(scope, root);
}

/** A chain's fetched full copy as a known version: its bytes, no deltas before it. */
const fullCopyOf = ({ header, payload }: { header: { type: string }; payload: Buffer }) => ({
  type: header.type,
  bytes: payload,
  size: payload.length,
  depth: 0,
  chainBytes: 0,
});

/** A version's count (`getNextVersion`: the count, then a random fraction). */
const versionCount = (field: string) => Math.floor(Number.parseFloat(field.slice(field.lastIndexOf("\n") + 1)));

/** Whether `field` is a later version of its channel than `held` is (or none is held). */
const laterThan = (field: string, held: KnownVersion | undefined) =>
  !held || versionCount(field) > versionCount(held.field);

/**
 * Channel values from each blob's chain of frames (newest first), or from `cached`, the versions
 * this process had when it asked (and told the script to skip); `latest`: the scope's latest
 * checkpoint, whose versions become this process's bases for deltas. A version of an older
 * checkpoint does too when it is later than the one held for its channel (a run another replica
 * ran, read to answer it): the next read then loads only what was added since.
 */
export async function decodeBlobs(
  serde: SerializerProtocol,
  known: KnownVersions,
  scope: string,
  blobList: string,
  chains: Buffer[][],
  latest: boolean,
  cached: Map<string, KnownVersion>,
): Promise<Record<string, unknown>> {
  const fields = blobList === "" ? [] : blobList.split("\0");
  const decoded = await Promise.all(
    fields.map(async (field, index): Promise<unknown> => {
      const version = cached.get(field);
      if (version && isSkipped(chains[index])) {
        if (latest) known.set(scope, channelOfBlobField(field), version);
        return knownValue(serde, known, version);
      }
      const chain = chains[index] ?? [];
      // A chain that reached a version this process has ends there: its deltas apply to its bytes.
      const base = cached.get(heldBaseOf(chain.at(-1)) ?? "");
      const frames = (base ? chain.slice(0, -1) : chain).map((frame) => decodeBlobFrame(frame)).reverse();
      const [full, ...deltas] = base ? [{ header: { type: base.type }, payload: bytesOf(base) }, ...frames] : frames;
      if (!full) return ABSENT;
      const { type } = deltas.at(-1)?.header ?? full.header;
      if (type === "empty") return ABSENT;
      const bytes = applyChain(full.payload, deltas);
      // The held version the chain stopped at, or the full copy it was read down to.
      keepChainRoot(known, scope, base ?? { field: deltas[0]?.header.base ?? field, ...fullCopyOf(full) });
      const channel = channelOfBlobField(field);
      const held = [...cached.values()].find((version) => channelOfBlobField(version.field) === channel);
      const { value, entries } = await loadSharing(serde, type, bytes, held);
      if (latest || laterThan(field, held)) {
        const ownDeltas = deltas.reduce((sum, delta) => sum + delta.payload.length, 0);
        const chainBytes = ownDeltas + (base?.chainBytes ?? 0);
        const depth = deltas.length + (base?.depth ?? 0);
        const itemTexts = entries?.map((entry) => entry.bytes);
        // A copy: the list itself goes to the reader, who may change it.
        const loadedForms = entries && [...(value as object[])];
        const read = { field, type, bytes, size: bytes.length, depth, chainBytes, entries, loadedForms, itemTexts };
        known.set(scope, channel, read);
      }
      return value;
    }),
  );
  // In the blob list's order whichever loads first, so every read of a checkpoint lists them alike.
  const values: Record<string, unknown> = {};
  for (const [index, field] of fields.entries()) {
    if (decoded[index] !== ABSENT) values[channelOfBlobField(field)] = decoded[index];
  }
  return values;
}

/** A flat HGETALL reply (as Lua returns it) as field/value pairs. */
export function pairs(flat: Buffer[]): (readonly [string, Buffer])[] {
  const result: (readonly [string, Buffer])[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) result.push([(flat[i] as Buffer).toString(), flat[i + 1] as Buffer]);
  return result;
}

/** Decodes stored writes, in the order live execution applies them. */
export function orderedWrites(entries: Iterable<readonly [string, Buffer]>): StoredWrite[] {
  const writes: StoredWrite[] = [];
  for (const [field, frame] of entries) {
    const { taskId, idx } = parseWriteField(field);
    const { header, payload } = decodeWriteFrame(frame);
    writes.push({ taskId, idx, header, payload });
  }
  const sortKey = (write: StoredWrite) => writesSortKey(write.header.task_path, write.taskId, write.idx);
  return writes.sort((a, b) => compareWritesSortKeys(sortKey(a), sortKey(b)));
}
