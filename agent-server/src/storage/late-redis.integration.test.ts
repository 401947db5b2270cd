import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, type LocalRedis, startRedisServer } from "../../../testing/redis-server.ts";
import { runFixtureConfig } from "../runs/testing/server.ts";

const cli = new URL("../cli/main.ts", import.meta.url).pathname;

async function status(url: string, init?: RequestInit): Promise<number | undefined> {
  try {
    return (await fetch(url, { ...init, signal: AbortSignal.timeout(5_000) })).status;
  } catch {
    return undefined;
  }
}

/**
 * The managed Redis of a fresh deployment can start after the agent server (a volume to bind, an
 * image to pull). A kubelet probes liveness meanwhile: the server must answer it while it waits,
 * and report itself ready only once Redis answers.
 */
describe("an agent server whose Redis comes up late", () => {
  let child: ChildProcess | undefined;
  let redis: LocalRedis | undefined;
  afterAll(async () => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
    await redis?.stop();
  });

  it("answers liveness at once, stays alive, and becomes ready when Redis is up", async () => {
    const [port, redisPort] = [await freePort(), await freePort()];
    const server = spawn(
      process.execPath,
      [
        "--conditions=source",
        cli,
        "serve",
        "--config",
        runFixtureConfig,
        "--port",
        String(port),
        "--host",
        "127.0.0.1",
      ],
      {
        env: {
          ...process.env,
          REDIS_URI: `redis://127.0.0.1:${redisPort}`,
          REDIS_PREFIX: "late-redis:",
          LOG_LEVEL: "silent",
          SHUTDOWN_GRACE_MS: "2000",
        },
        stdio: "ignore",
      },
    );
    child = server;
    const base = `http://127.0.0.1:${port}`;
    await expect.poll(() => status(`${base}/ok`), { timeout: 20_000, interval: 100 }).toBe(200);
    expect(await status(`${base}/ok?check_db=1`)).toBe(503);
    expect(await status(`${base}/threads`, { method: "POST", body: "{}" })).toBe(503);

    // Longer than a few reconnect attempts: the server keeps waiting, and keeps answering liveness.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(server.exitCode).toBeNull();
    expect(await status(`${base}/ok`)).toBe(200);
    expect(await status(`${base}/ok?check_db=1`)).toBe(503);

    redis = await startRedisServer({ port: redisPort });
    await expect.poll(() => status(`${base}/ok?check_db=1`), { timeout: 20_000, interval: 100 }).toBe(200);
    const created = await fetch(`${base}/threads`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(created.status).toBe(200);

    const exited = new Promise<number | null>((resolve) => server.once("exit", (code) => resolve(code)));
    server.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 60_000);
});
