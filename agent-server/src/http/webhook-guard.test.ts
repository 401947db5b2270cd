import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { exampleConfig, startTestServer } from "../graphs/testing/server.ts";
import type { AgentServer } from "../server.ts";

const post = (server: AgentServer, path: string, body: unknown) =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

const run = (webhook: string) => ({ assistant_id: "agent", input: { messages: [] }, webhook });

describe("webhook URLs at run and cron creation", () => {
  let strict: AgentServer;
  let allowing: AgentServer;
  let receiver: Server;
  let receiverUrl: string;
  const received: string[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      received.push(req.url ?? "");
      req.resume();
      res.end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    [strict, allowing] = await Promise.all([
      startTestServer(exampleConfig, { redisUrl: testRedisUrl(), prefix: uniquePrefix("webhooks") }),
      startTestServer(exampleConfig, {
        redisUrl: testRedisUrl(),
        prefix: uniquePrefix("webhooks"),
        env: { WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" },
      }),
    ]);
  });
  afterAll(async () => {
    await strict?.close();
    await allowing?.close();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it.each([
    ["/runs/wait", "http://169.254.169.254/latest/meta-data/"],
    ["/runs", "http://localhost:8000/hook"],
    ["/runs/stream", "http://10.0.0.1/hook"],
    ["/runs", "http://[::1]:9/hook"],
    ["/runs", "http://kubernetes.default.svc/api"],
    ["/runs/crons", "http://192.168.0.10/hook"],
  ])("POST %s refuses %s with 422 at the field", async (path, webhook) => {
    const body = path === "/runs/crons" ? { ...run(webhook), schedule: "0 0 * * *" } : run(webhook);
    const response = await post(strict, path, body);
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      detail: [{ loc: ["body", "webhook"], msg: expect.any(String), type: "webhook_refused" }],
    });
  });

  it("refuses a thread-stream run.start whose webhook is internal", async () => {
    const thread = (await (await post(strict, "/threads", {})).json()) as { thread_id: string };
    const response = await post(strict, `/threads/${thread.thread_id}/commands`, {
      id: 1,
      method: "run.start",
      params: run("http://169.254.169.254/"),
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ detail: [{ loc: ["body", "params", "webhook"] }] });
  });

  it("names the refused entry of a batch and creates none of its runs", async () => {
    const response = await post(strict, "/runs/batch", [run("https://8.8.8.8/ok"), run("http://127.0.0.1/hook")]);
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ detail: [{ loc: ["body", 1, "webhook"] }] });
  });

  it("refuses a thread run's internal webhook and leaves the thread idle", async () => {
    const thread = (await (await post(strict, "/threads", {})).json()) as { thread_id: string };
    const response = await post(strict, `/threads/${thread.thread_id}/runs`, run("http://127.0.0.1:1/hook"));
    expect(response.status).toBe(422);
    const after = (await (await fetch(`${strict.url}/threads/${thread.thread_id}`)).json()) as { status: string };
    expect(after.status).toBe("idle");
  });

  it("accepts paths of this server and public addresses", async () => {
    expect((await post(strict, "/runs", run("/hooks/done"))).status).toBe(200);
    expect((await post(strict, "/runs", run("https://8.8.8.8/hook"))).status).toBe(200);
  });

  it("creates and delivers to an internal address WEBHOOK_ALLOWED_HOSTS allows", async () => {
    const response = await post(allowing, "/runs/wait", run(`${receiverUrl}/allowed`));
    expect(response.status).toBe(200);
    await expect.poll(() => received, { timeout: 10_000 }).toContain("/allowed");
  });
});
