/**
 * A protobuf wire-format walker: splits a message into its fields without a schema. Readers of
 * particular messages (OTLP trace exports, Kubernetes objects) give the field numbers meaning.
 */

export interface WireField {
  field: number;
  /** Wire type 0. */
  varint?: bigint;
  /** Wire types 2 (length-delimited), 1 and 5 (fixed 64 and 32 bits). */
  bytes?: Buffer;
}

export function readVarint(buffer: Buffer, offset: number): [bigint, number] {
  let value = 0n;
  let shift = 0n;
  for (let i = offset; i < buffer.length && shift < 70n; i++) {
    const byte = buffer[i] as number;
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value, i + 1];
    shift += 7n;
  }
  throw new Error("truncated varint");
}

export function readFields(buffer: Buffer): WireField[] {
  const fields: WireField[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    const [key, next] = readVarint(buffer, offset);
    const field = Number(key >> 3n);
    const wireType = Number(key & 7n);
    offset = next;
    if (wireType === 0) {
      const [varint, after] = readVarint(buffer, offset);
      fields.push({ field, varint });
      offset = after;
    } else if (wireType === 2) {
      const [length, start] = readVarint(buffer, offset);
      offset = start + Number(length);
      if (offset > buffer.length) throw new Error(`field ${field} runs past the end of the message`);
      fields.push({ field, bytes: buffer.subarray(start, offset) });
    } else if (wireType === 1 || wireType === 5) {
      const size = wireType === 1 ? 8 : 4;
      if (offset + size > buffer.length) throw new Error(`field ${field} runs past the end of the message`);
      fields.push({ field, bytes: buffer.subarray(offset, offset + size) });
      offset += size;
    } else {
      throw new Error(`unsupported wire type ${wireType}`);
    }
  }
  return fields;
}
