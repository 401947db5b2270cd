import type { Checkpoint, CheckpointMetadata, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { blobField, channelOfBlobField } from "./redis-layout.ts";
import { pack, unpack } from "./redis-pack.ts";

/**
 * A checkpoint's record (everything but its channel values) as one Redis string:
 *
 *     <byte length of the blob list>\n<blob list><pack(header line, checkpoint bytes, metadata bytes)>
 *
 * The blob list (the `<channel>\n<version>` fields it reads, NUL-joined) comes first and as it
 * is, so scripts read it without decoding the rest. The rest is packed (`redis-pack.ts`: a flag
 * byte, deflated only when large) and leaves out what the key or the blob list already says: the checkpoint's id, its
 * `channel_versions` when they are numbers (the blob list names them), and the metadata's
 * `thread_id` when it is the thread's own (a placeholder keeps its place among the keys, so a
 * copied thread reads its own id without rewriting the record). Header keys: `t` and `mt` the
 * serde types of the checkpoint and the metadata, `n` the checkpoint's byte length, `p` the
 * parent id, `v: 1` versions from the blob list, `h: 1` the thread id placeholder.
 *
 * Records written before this layout are hashes (`checkpoint`, `type`, `metadata`,
 * `metadata_type`, `parent`, `blobs`) and are read as they were; scripts tell them apart by type.
 */

interface PackedHeader {
  t: string;
  mt: string;
  n: number;
  p?: string;
  v?: 1;
  h?: 1;
}

/** A stored record, decoded: the checkpoint without its channel values. */
export interface CheckpointRecord {
  checkpoint: Checkpoint;
  metadata: CheckpointMetadata;
  parentId: string | undefined;
  /** The blob fields it reads, NUL-joined. */
  blobList: string;
}

/** A record as scripts return it: the packed string, the legacy hash's six fields, or nothing. */
export type RawRecord = Buffer | (Buffer | null)[] | null;

const THREAD_PLACEHOLDER = 0;

export async function packRecord(
  serde: SerializerProtocol,
  threadId: string,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  parentId: string | undefined,
): Promise<Buffer> {
  const { channel_values: _values, id: _id, channel_versions: versions, ...rest } = checkpoint;
  const blobList = Buffer.from(
    Object.entries(versions)
      .map(([channel, version]) => blobField(channel, version))
      .join("\0"),
  );
  const numeric = Object.values(versions).every((version) => typeof version === "number");
  const ownThread = (metadata as { thread_id?: unknown }).thread_id === threadId;
  const [[type, body], [metadataType, metadataBytes]] = await Promise.all([
    serde.dumpsTyped(numeric ? rest : { ...rest, channel_versions: versions }),
    serde.dumpsTyped(ownThread ? { ...metadata, thread_id: THREAD_PLACEHOLDER } : metadata),
  ]);
  const header: PackedHeader = { t: type, mt: metadataType, n: body.byteLength };
  if (parentId !== undefined) header.p = parentId;
  if (numeric) header.v = 1;
  if (ownThread) header.h = 1;
  const packed = pack(Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), body, metadataBytes]));
  return Buffer.concat([Buffer.from(`${blobList.length}\n`), blobList, packed]);
}

/** The blob list of a raw record, without decoding the rest. */
export function blobListOf(raw: RawRecord): string {
  if (!raw) return "";
  if (!Buffer.isBuffer(raw)) return raw[5]?.toString() ?? "";
  const newline = raw.indexOf(10);
  return raw.subarray(newline + 1, newline + 1 + Number(raw.subarray(0, newline).toString())).toString();
}

function versionsOf(blobList: string): Record<string, number> {
  const versions: Record<string, number> = {};
  for (const field of blobList === "" ? [] : blobList.split("\0")) {
    versions[channelOfBlobField(field)] = Number(field.slice(field.lastIndexOf("\n") + 1));
  }
  return versions;
}

/** A raw record decoded (either layout); undefined when it is missing or incomplete. */
export async function decodeRecord(
  serde: SerializerProtocol,
  threadId: string,
  id: string,
  raw: RawRecord,
): Promise<CheckpointRecord | undefined> {
  if (!raw) return undefined;
  if (!Buffer.isBuffer(raw)) {
    const [serialized, type, metadataBytes, metadataType, parent, blobs] = raw;
    if (!serialized || !type || !metadataBytes || !metadataType) return undefined;
    return {
      checkpoint: (await serde.loadsTyped(type.toString(), serialized)) as Checkpoint,
      metadata: (await serde.loadsTyped(metadataType.toString(), metadataBytes)) as CheckpointMetadata,
      parentId: parent?.toString(),
      blobList: blobs?.toString() ?? "",
    };
  }
  const newline = raw.indexOf(10);
  const listEnd = newline + 1 + Number(raw.subarray(0, newline).toString());
  const blobList = raw.subarray(newline + 1, listEnd).toString();
  const inner = unpack(raw.subarray(listEnd));
  const headerEnd = inner.indexOf(10);
  const header = JSON.parse(inner.subarray(0, headerEnd).toString()) as PackedHeader;
  const bodyEnd = headerEnd + 1 + header.n;
  const [body, metadata] = await Promise.all([
    serde.loadsTyped(header.t, inner.subarray(headerEnd + 1, bodyEnd)) as Promise<Record<string, unknown>>,
    serde.loadsTyped(header.mt, inner.subarray(bodyEnd)) as Promise<Record<string, unknown>>,
  ]);
  if (header.h) metadata.thread_id = threadId;
  const { v, ts, ...rest } = body;
  const versions = header.v ? { channel_versions: versionsOf(blobList) } : {};
  const checkpoint = { v, id, ts, channel_values: {}, ...versions, ...rest } as unknown as Checkpoint;
  return { checkpoint, metadata: metadata as CheckpointMetadata, parentId: header.p, blobList };
}

/** The run a raw record's checkpoint belongs to (its metadata's `run_id`), if any. */
export async function runIdOfRecord(serde: SerializerProtocol, threadId: string, id: string, raw: RawRecord) {
  return ((await decodeRecord(serde, threadId, id, raw))?.metadata as { run_id?: unknown } | undefined)?.run_id;
}
