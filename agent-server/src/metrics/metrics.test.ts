import { ErrorReply } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { type ExtensionTestServer, startExtensionServer } from "../long-term-store/testing/server.ts";
import { eventually } from "../runs/testing/wait.ts";
import { EVENT_LOOP_SAMPLE_MS, ServerMetrics } from "./registry.ts";

/** Value of one sample line (`name{labels} value`) of a Prometheus text exposition. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-z_]+)(\{.*\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = Object.entries(labels).every(([key, value]) => match[2]?.includes(`${key}="${value}"`));
    if (present) return Number(match[3]);
  }
  return undefined;
}

describe("/metrics", () => {
  let app: ExtensionTestServer;
  let other: ExtensionTestServer;

  beforeAll(async () => {
    app = await startExtensionServer(testRedisUrl(), { prefix: uniquePrefix("metrics") });
    other = await startExtensionServer(undefined);
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
  });

  it("reports HTTP latency by route pattern, runs by status, run latency and queue depth", async () => {
    const thread = await app.client.threads.create();
    await app.client.threads.get(thread.thread_id);
    await app.client.runs.wait(thread.thread_id, "adder", { input: { a: 1, b: 2 } });
    await fetch(`${app.url}/threads/not-a-uuid`);

    const response = await fetch(`${app.url}/metrics`);
    expect(response.headers.get("content-type")).toContain("text/plain");
    await response.body?.cancel();
    // run callbacks are delivered in the background: the run may be counted a moment after it ended
    const text = await eventually(
      async () => (await fetch(`${app.url}/metrics`)).text(),
      (body) => sample(body, "agentplane_runs_finished_total", { status: "success" }) !== undefined,
      5000,
    );
    const byRoute = { method: "GET", route: "/threads/:thread_id", status: "200" };
    expect(sample(text, "agentplane_http_request_duration_seconds_count", byRoute)).toBe(1);
    expect(
      sample(text, "agentplane_http_request_duration_seconds_count", { route: "/threads/:thread_id", status: "422" }),
    ).toBe(1);
    expect(sample(text, "agentplane_runs_finished_total", { status: "success" })).toBe(1);
    expect(sample(text, "agentplane_run_duration_seconds_count", { status: "success" })).toBe(1);
    expect(sample(text, "agentplane_run_queue_depth")).toBe(0);
    expect(sample(text, "agentplane_runs_inflight", { status: "running" })).toBe(0);
    expect(sample(text, "agentplane_redis_errors_total")).toBeUndefined();
    expect(text).toContain("# TYPE agentplane_redis_errors_total counter");
    expect(text).toContain("agentplane_process_cpu_seconds_total");
  });

  it("still sees an event-loop stall a few sampling intervals long", async () => {
    // A scrape reads and restarts the delay histogram, whose first sample after that only sets
    // where the next interval starts: the stall comes a few samples later.
    await (await fetch(`${app.url}/metrics`)).text();
    await new Promise((resolve) => setTimeout(resolve, 3 * EVENT_LOOP_SAMPLE_MS));
    const stallMs = 3 * EVENT_LOOP_SAMPLE_MS;
    const until = performance.now() + stallMs;
    while (performance.now() < until) {
      // The server runs in this process: its event loop is held here.
    }
    const text = await (await fetch(`${app.url}/metrics`)).text();
    expect(sample(text, "agentplane_nodejs_eventloop_lag_max_seconds")).toBeGreaterThanOrEqual(
      (stallMs - EVENT_LOOP_SAMPLE_MS) / 1000,
    );
  });

  it("keeps one registry per server instance", async () => {
    const text = await (await fetch(`${other.url}/metrics`)).text();
    expect(sample(text, "agentplane_runs_finished_total", { status: "success" })).toBeUndefined();
    expect(text).not.toContain('route="/threads/:thread_id"');
  });

  it("reports its features truthfully in /info", async () => {
    const info = (await (await fetch(`${app.url}/info`)).json()) as { version: string; flags: Record<string, boolean> };
    expect(info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(info.flags).toMatchObject({ metrics: true, crons: true, store: true, store_semantic_search: false });
  });

  it("counts Redis failures by where they were seen, and nothing else", async () => {
    const metrics = new ServerMetrics();
    const count = metrics.redisErrorCounter("crons");
    count(new ErrorReply("ERR wrong number of arguments"));
    count(new TypeError("not a Redis error"));
    const text = await metrics.registry.metrics();
    expect(sample(text, "agentplane_redis_errors_total", { source: "crons" })).toBe(1);
  });
});
