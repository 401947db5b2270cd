import { describe, expect, it } from "vitest";
import { END_EVENT } from "../stream/event-log.ts";
import { PROTOCOL_EVENT, SEQ_STRIDE, toProtocolEvent } from "./events.ts";

describe("protocol events from a run's log", () => {
  it("sends a stored event's text behind its envelope: the JSON of the event it parses to", () => {
    const stored = { method: "values", params: { namespace: ["a:1"], timestamp: 5, data: { text: 'q"\\u2028' } } };
    const sent = toProtocolEvent(2, "graph", { id: 7, event: PROTOCOL_EVENT, data: JSON.stringify(stored) });
    const seq = 2 * SEQ_STRIDE + 7;
    expect(sent?.event).toEqual({ type: "event", event_id: String(seq), seq, ...stored });
    expect(sent?.json).toBe(JSON.stringify(sent?.event));
  });

  it("ends a failed run with its terminal lifecycle, and skips other entries", () => {
    const failed = { id: 3, event: END_EVENT, data: JSON.stringify({ status: "error", error: { message: "boom" } }) };
    const sent = toProtocolEvent(1, "graph", failed);
    expect(sent?.event).toMatchObject({ method: "lifecycle", params: { data: { event: "failed", error: "boom" } } });
    expect(JSON.parse(sent?.json ?? "")).toEqual(sent?.event);
    expect(toProtocolEvent(1, "graph", { id: 4, event: "metadata", data: "{}" })).toBeUndefined();
    expect(toProtocolEvent(1, "graph", { ...failed, data: JSON.stringify({ status: "success" }) })).toBeUndefined();
  });
});
