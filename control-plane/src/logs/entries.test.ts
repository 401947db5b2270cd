import { describe, expect, it } from "vitest";
import { BadCursor, failureEntry, type KeyedEntry, matches, page, parsePodLog } from "./entries.ts";

const log = [
  '2026-01-01T00:00:01.000Z {"level":30,"time":1,"msg":"server started"}',
  "2026-01-01T00:00:02.000Z plain text, not JSON",
  '2026-01-01T00:00:03.000Z {"level":50,"msg":"run failed","run_id":"run-1"}',
  '2026-01-01T00:00:04.000Z {"levelname":"WARNING","message":"slow","run_id":"run-2"}',
  '2026-01-01T00:00:05.000Z {"level":"debug","event":"tick"}',
  '2026-01-01T00:00:06.000Z {"level":60,"msg":"out of memory"}',
  "2026-01-01T00:00:07.000Z {not json",
  "",
].join("\n");

const entries = () => parsePodLog({ pod: "agent-1", revisionId: "rev-1", text: log });
const messages = (list: { message: string }[]) => list.map((e) => e.message);

describe("parsePodLog", () => {
  it("reads the Kubernetes timestamp, and level, message and run_id of JSON lines", () => {
    const parsed = entries().map((k) => k.entry);
    expect(parsed[0]).toEqual({
      id: "agent-1:0",
      timestamp: "2026-01-01T00:00:01.000Z",
      level: "INFO",
      message: "server started",
      pod_name: "agent-1",
      revision_id: "rev-1",
      run_id: null,
    });
    expect(parsed.map((e) => [e.level, e.message, e.run_id])).toEqual([
      ["INFO", "server started", null],
      ["INFO", "plain text, not JSON", null],
      ["ERROR", "run failed", "run-1"],
      ["WARNING", "slow", "run-2"],
      ["DEBUG", "tick", null],
      ["CRITICAL", "out of memory", null],
      ["INFO", "{not json", null],
    ]);
  });

  it("skips lines without a timestamp", () => {
    expect(parsePodLog({ pod: "p", revisionId: null, text: "no time here\n\n" })).toEqual([]);
  });
});

describe("matches", () => {
  const filtered = (filter: Parameters<typeof matches>[0]) =>
    messages(
      entries()
        .filter(matches(filter))
        .map((k) => k.entry),
    );

  it("keeps the level asked for and more severe ones", () => {
    expect(filtered({ level: "WARNING" })).toEqual(["run failed", "slow", "out of memory"]);
    expect(filtered({ level: "CRITICAL" })).toEqual(["out of memory"]);
  });

  it("filters by time (start inclusive, end exclusive), text (any case) and run", () => {
    const at = (s: number) => Date.parse(`2026-01-01T00:00:0${s}.000Z`);
    expect(filtered({ start: at(5), end: at(7) })).toEqual(["tick", "out of memory"]);
    expect(filtered({ query: "RUN" })).toEqual(["run failed"]);
    expect(filtered({ runId: "run-2" })).toEqual(["slow"]);
  });
});

describe("page", () => {
  const all = () => [...entries(), failureEntry("rev-1", "ImagePullBackOff: no such image", "2026-01-01T00:00:03Z")];

  it("pages forward with cursors that survive lines written in between", () => {
    const first = page(all(), "asc", 3, null);
    expect(messages(first.entries)).toEqual([
      "server started",
      "plain text, not JSON",
      "ImagePullBackOff: no such image",
    ]);
    // A line written meanwhile, earlier than the cursor, does not shift the next page.
    const grown: KeyedEntry[] = [
      ...all(),
      ...parsePodLog({ pod: "agent-0", revisionId: null, text: "2026-01-01T00:00:00.500Z late line" }),
    ];
    const second = page(grown, "asc", 3, first.next);
    expect(messages(second.entries)).toEqual(["run failed", "slow", "tick"]);
    const third = page(grown, "asc", 3, second.next);
    expect(messages(third.entries)).toEqual(["out of memory", "{not json"]);
    expect(third.next).toBeNull();
  });

  it("pages newest first", () => {
    const first = page(all(), "desc", 2, undefined);
    expect(messages(first.entries)).toEqual(["{not json", "out of memory"]);
    expect(messages(page(all(), "desc", 2, first.next).entries)).toEqual(["tick", "slow"]);
  });

  it("refuses a cursor it did not give", () => {
    for (const cursor of [
      "nope",
      Buffer.from("[1,2]").toString("base64url"),
      Buffer.from('{"a":1}').toString("base64url"),
    ]) {
      expect(() => page(all(), "asc", 3, cursor)).toThrow(BadCursor);
    }
  });
});
