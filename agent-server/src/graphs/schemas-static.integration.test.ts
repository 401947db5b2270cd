import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { StaticSchemaCache, schemaTimeoutMs } from "./schemas-static.ts";

const fixtureModule = join(import.meta.dirname, "testing", "project", "graphs.ts");

/** Log lines as the cache writes them. */
function recordingLog() {
  const lines: { level: string; details: object; message: string }[] = [];
  return {
    lines,
    debug: (details: object, message: string) => lines.push({ level: "debug", details, message }),
    warn: (details: object, message: string) => lines.push({ level: "warn", details, message }),
  };
}

// The TypeScript compiler type-checks the fixture project in a worker: seconds, more under load.
const TYPES_TIMEOUT_MS = 120_000;

describe("StaticSchemaCache", () => {
  it(
    "reads an Annotation state's JSON Schema from the types, once per graph",
    async () => {
      const log = recordingLog();
      const cache = new StaticSchemaCache(
        new Map([
          ["messages", { sourceFile: fixtureModule, exportSymbol: "messages" }],
          ["missing", { sourceFile: fixtureModule, exportSymbol: "noSuchExport" }],
        ]),
        log,
        TYPES_TIMEOUT_MS,
      );
      const first = cache.get("messages");
      expect(cache.get("messages")).toBe(first);
      expect(cache.settled("messages")).toBeUndefined();
      const schemas = await first;
      expect(cache.settled("messages")).toBe(schemas);
      expect(Object.keys(schemas ?? {})).toEqual(["messages"]);
      expect(schemas?.messages?.state).toMatchObject({
        type: "object",
        properties: {
          messages: { type: "array", items: { $ref: expect.stringMatching(/^#\/definitions\/BaseMessage/) } },
        },
      });

      expect(await cache.get("missing")).toBeUndefined();
      expect(log.lines).toContainEqual({
        level: "warn",
        details: { graph_id: "missing", error: expect.stringContaining("noSuchExport") },
        message: "cannot read the graph's schemas from its types",
      });
      expect(await cache.get("not-in-the-project")).toBeUndefined();
    },
    TYPES_TIMEOUT_MS,
  );

  it("takes its time limit from the reference server's setting", () => {
    expect(schemaTimeoutMs({})).toBe(30_000);
    expect(schemaTimeoutMs({ LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: "5000" })).toBe(5000);
    expect(schemaTimeoutMs({ LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: "soon" })).toBe(30_000);
  });
});
