import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { type ServerProcess, spawnServer } from "./testing/process.ts";

interface SseEvent {
  id?: number;
  event: string;
  data: string;
}

/** The events of a whole SSE body. */
function parseSse(body: string): SseEvent[] {
  return body
    .split("\n\n")
    .map((block) => {
      const fields = new Map(
        block
          .split("\n")
          .filter((line) => !line.startsWith(":") && line.includes(":"))
          .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trimStart()]),
      );
      const id = fields.get("id");
      return {
        ...(id !== undefined && { id: Number(id) }),
        event: fields.get("event") ?? "",
        data: fields.get("data") ?? "",
      };
    })
    .filter(({ event }) => event !== "");
}

/**
 * A run that emits ten times more events than RUN_EVENT_LOG_MAX_EVENTS, in a real server
 * process on Redis: its log keeps about the cap, expires after the run, and a client joining
 * from the start is told what it missed.
 */
describe("a run's capped event log", () => {
  const prefix = uniquePrefix("ev-cap");
  let server: ServerProcess;
  let redis: Awaited<ReturnType<typeof connectTestRedis>>;

  beforeAll(async () => {
    redis = await connectTestRedis();
    server = await spawnServer(testRedisUrl(), prefix, { RUN_EVENT_LOG_MAX_EVENTS: "100", N_WORKERS: "1" });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await redis?.quit();
  });

  it("keeps about the cap, expires once finished, and a join from the start gets an error then the kept events", async () => {
    const thread = await server.client.threads.create();
    const response = await fetch(`${server.url}/threads/${thread.thread_id}/runs/wait`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ assistant_id: "chatty", input: { count: 1000, size: 10 }, stream_mode: ["custom"] }),
    });
    expect(response.status).toBe(200);
    await response.text();
    const [run] = await server.client.runs.list(thread.thread_id);
    const key = `${prefix}runs:ev:${run?.run_id}`;

    const length = await redis.xLen(key);
    // `MAXLEN ~` trims whole stream nodes of 100 entries: at most one node over the cap.
    expect(length).toBeGreaterThanOrEqual(100);
    expect(length).toBeLessThanOrEqual(200);
    const ttl = await redis.ttl(key);
    expect(ttl).toBeGreaterThan(3500);
    expect(ttl).toBeLessThanOrEqual(3600);

    const joined = parseSse(
      await (await fetch(`${server.url}/threads/${thread.thread_id}/runs/${run?.run_id}/stream`)).text(),
    );
    const oldest = (await redis.xRange(key, "-", "+", { COUNT: 1 }))?.[0];
    const firstKept = Number(oldest?.id.split("-")[1]) - 1;
    expect(joined[0]).toMatchObject({ id: firstKept - 1, event: "error" });
    expect(JSON.parse(joined[0]?.data ?? "")).toMatchObject({
      error: "EventsDropped",
      message: expect.stringContaining(`Events 0 to ${firstKept - 1}`),
    });
    const rest = joined.slice(1);
    expect(rest.map(({ id }) => id)).toEqual(rest.map((_, i) => firstKept + i));
    expect(rest.at(-1)).toMatchObject({ event: "custom", data: JSON.stringify({ i: 999, text: "x".repeat(10) }) });
    // Every kept event but the closing entry (never sent) reached the client.
    expect(rest.length).toBe(length - 1);
  });
});
