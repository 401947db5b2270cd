/**
 * Reads OTLP/HTTP protobuf trace exports (`ExportTraceServiceRequest`) with a protobuf wire-format
 * walker and the few field numbers of opentelemetry-proto's trace and common messages that tests
 * look at.
 */

import { readFields, type WireField } from "./protobuf-wire.ts";

type AttributeValue = string | number | boolean;

export interface ExportedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  attributes: Record<string, AttributeValue>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttributeValue>;
}

const messages = (fields: WireField[], field: number) =>
  fields.filter((f) => f.field === field && f.bytes).map((f) => readFields(f.bytes as Buffer));
const bytesOf = (fields: WireField[], field: number) => fields.find((f) => f.field === field)?.bytes;

/** AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4. */
function anyValue(fields: WireField[]): AttributeValue {
  for (const f of fields) {
    if (f.field === 1) return (f.bytes as Buffer).toString("utf8");
    if (f.field === 2) return f.varint === 1n;
    if (f.field === 3) return Number(f.varint);
    if (f.field === 4) return (f.bytes as Buffer).readDoubleLE(0);
  }
  return "";
}

/** Repeated KeyValue {key 1, value 2} at `field`. */
function attributes(fields: WireField[], field: number): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const keyValue of messages(fields, field)) {
    const key = bytesOf(keyValue, 1)?.toString("utf8") ?? "";
    out[key] = anyValue(messages(keyValue, 2)[0] ?? []);
  }
  return out;
}

/** ExportTraceServiceRequest → ResourceSpans (1) → resource (1), ScopeSpans (2) → Span (2). */
export function decodeTraceExport(body: Buffer): ExportedSpan[] {
  const spans: ExportedSpan[] = [];
  for (const resourceSpans of messages(readFields(body), 1)) {
    const resource = attributes(messages(resourceSpans, 1)[0] ?? [], 1);
    for (const scopeSpans of messages(resourceSpans, 2)) {
      for (const span of messages(scopeSpans, 2)) {
        const status = messages(span, 15)[0] ?? [];
        spans.push({
          traceId: bytesOf(span, 1)?.toString("hex") ?? "",
          spanId: bytesOf(span, 2)?.toString("hex") ?? "",
          parentSpanId: bytesOf(span, 4)?.toString("hex") ?? "",
          name: bytesOf(span, 5)?.toString("utf8") ?? "",
          attributes: attributes(span, 9),
          statusCode: Number(status.find((f) => f.field === 3)?.varint ?? 0n),
          resource,
        });
      }
    }
  }
  return spans;
}
