import type { Run } from "@langchain/core/tracers/base";
import { describe, expect, it } from "vitest";
import { otelExportConfigured, runAttributes } from "./otel.ts";

describe("otelExportConfigured", () => {
  it("is on with an OTLP endpoint, off without one or when the SDK is disabled", () => {
    expect(otelExportConfigured({})).toBe(false);
    expect(otelExportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(otelExportConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(true);
    expect(otelExportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBe(
      false,
    );
  });
});

describe("runAttributes", () => {
  const run = (metadata: Record<string, unknown>, tags?: string[]) =>
    ({ id: "r", name: "n", run_type: "llm", tags, extra: { metadata } }) as unknown as Run;

  it("keeps scalar metadata, names the thread the conversation, and bounds long values", () => {
    const attributes = runAttributes(
      run({ thread_id: "t-1", run_attempt: 2, streamed: true, nested: { a: 1 }, long: "x".repeat(5000) }, ["a", "b"]),
    );
    expect(attributes).toMatchObject({
      "langsmith.span.kind": "llm",
      "langsmith.span.tags": "a, b",
      "langsmith.metadata.thread_id": "t-1",
      "langsmith.metadata.run_attempt": 2,
      "langsmith.metadata.streamed": true,
      "gen_ai.conversation.id": "t-1",
    });
    expect(attributes).not.toHaveProperty("langsmith.metadata.nested");
    expect(String(attributes["langsmith.metadata.long"]).length).toBe(1000);
  });

  it("has no conversation id without a thread", () => {
    expect(runAttributes(run({}))).toEqual({ "langsmith.span.kind": "llm" });
  });
});
