import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalRedis, startRedisServer } from "../../../testing/redis-server.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";

/** Status, body and how long the answer took; `undefined` status when it took longer than `limitMs`. */
async function timed(url: string, limitMs = 10_000, init: RequestInit = {}) {
  const started = Date.now();
  try {
    const response = await fetch(url, {
      ...init,
      headers: { "content-type": "application/json" },
      signal: AbortSignal.timeout(limitMs),
    });
    return { status: response.status, body: await response.json(), ms: Date.now() - started };
  } catch {
    return { status: undefined, body: undefined, ms: Date.now() - started };
  }
}

/** A Redis that stops answering (SIGSTOP: the connection stays open, nothing comes back), then resumes. */
describe("Redis outage", () => {
  let redis: LocalRedis;
  let server: ServerProcess;

  beforeAll(async () => {
    redis = await startRedisServer();
    server = await spawnServer(redis.url, "outage:");
  });
  afterAll(async () => {
    redis?.process.kill("SIGCONT");
    await server?.stop();
    await redis?.stop();
  });

  it("answers the health check within 2 s, fails requests fast with 503 JSON, and recovers on SIGCONT", async () => {
    const thread = await server.client.threads.create();
    expect((await timed(`${server.url}/ok?check_db=1`)).status).toBe(200);
    redis.process.kill("SIGSTOP");
    try {
      const health = await timed(`${server.url}/ok?check_db=1`);
      expect(health.status).toBe(500);
      expect(health.body).toEqual({ detail: "Storage is unavailable" });
      expect(health.ms).toBeLessThan(2500);
      // Reads, writes, searches and run creation: each fails fast with 503 JSON, never a 500.
      const requests = [
        timed(`${server.url}/threads/${thread.thread_id}`),
        timed(`${server.url}/threads`, 10_000, { method: "POST", body: "{}" }),
        timed(`${server.url}/threads/search`, 10_000, { method: "POST", body: "{}" }),
        timed(`${server.url}/store/items`, 10_000, {
          method: "PUT",
          body: JSON.stringify({ namespace: ["outage"], key: "k", value: { v: 1 } }),
        }),
        timed(`${server.url}/threads/${thread.thread_id}/runs`, 10_000, {
          method: "POST",
          body: JSON.stringify({ assistant_id: "agent", input: { messages: [] } }),
        }),
      ];
      for (const answer of await Promise.all(requests)) {
        expect(answer).toMatchObject({ status: 503, body: { detail: "Storage is unavailable" } });
        expect(answer.ms).toBeLessThan(5000);
      }
    } finally {
      redis.process.kill("SIGCONT");
    }
    await expect.poll(async () => (await timed(`${server.url}/ok?check_db=1`)).status, { timeout: 10_000 }).toBe(200);
    await expect
      .poll(async () => (await timed(`${server.url}/threads/${thread.thread_id}`)).status, { timeout: 10_000 })
      .toBe(200);
  }, 60_000);
});
