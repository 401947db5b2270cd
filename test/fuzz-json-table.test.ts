import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, spawnServer } from "../agent-server/src/runs/testing/process.ts";
import { busyThreadsAfter, call, send } from "../testing/fuzz-client.ts";
import {
  BadRequests,
  nestedArrays,
  nestedValue,
  type OpenApiDocument,
  type Operation,
  operationsOf,
  Random,
  wideObject,
} from "../testing/openapi-fuzz.ts";
import { testRedisUrl, uniquePrefix } from "../testing/redis.ts";

/**
 * Every endpoint taking a JSON body, against a real agent server (its own process, on Redis):
 * a body nested 5,000 levels or 40,000 keys wide, and a body that reaches the handler with each
 * field replaced by a value 250 levels deep (within the limit) or 10,000 keys wide. Ids in paths
 * are of existing records (a thread, an assistant, a cron per operation), so runs get created.
 * No answer may be a 5xx, and every thread must be idle again once the runs are done.
 */
let server: ServerProcess;
const json = (method: string, path: string, body?: unknown) => call(server.url, method, path, body);

beforeAll(async () => {
  server = await spawnServer(testRedisUrl(), uniquePrefix("json-table"), { N_WORKERS: "8", LOG_LEVEL: "fatal" });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

/** A body the operation accepts as far as ids go: its schema's sample with ids that exist. */
function baseBody(generator: BadRequests, operation: Operation): Record<string, unknown> {
  const body = generator.sample(operation.body ?? {}) as Record<string, unknown>;
  if (!body || typeof body !== "object" || Array.isArray(body)) return {};
  // A delayed run would hold up every later run of its thread for the rest of the test.
  delete body.after_seconds;
  return {
    ...body,
    ...("assistant_id" in body && { assistant_id: "agent" }),
    ...("graph_id" in body && { graph_id: "agent" }),
    ...("schedule" in body && { schedule: "0 0 1 1 *" }),
    ...("webhook" in body && { webhook: null }),
  };
}

describe("nested and wide JSON on every endpoint taking a body", () => {
  it("never answers 5xx and leaves no thread busy", async () => {
    const doc = (await json("GET", "/openapi.json")) as unknown as OpenApiDocument;
    const generator = new BadRequests(new Random(1), doc, []);
    const failures: string[] = [];
    const check = async (operation: Operation) => {
      // Records of its own: runs on one thread would queue behind each other.
      const ids: Record<string, string> = {
        thread_id: String((await json("POST", "/threads", {})).thread_id),
        assistant_id: String((await json("POST", "/assistants", { graph_id: "agent" })).assistant_id),
        cron_id: String((await json("POST", "/runs/crons", { assistant_id: "agent", schedule: "0 0 1 1 *" })).cron_id),
      };
      const url = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => ids[name] ?? randomUUID());
      const bodies: [string, string][] = [
        ["5,000 levels", nestedArrays(5_000)],
        ["40,000 keys", JSON.stringify(wideObject(40_000))],
      ];
      const valid = baseBody(generator, operation);
      for (const field of Object.keys(valid)) {
        bodies.push([`${field} 250 levels deep`, JSON.stringify({ ...valid, [field]: nestedValue(250) })]);
        bodies.push([`${field} with 10,000 keys`, JSON.stringify({ ...valid, [field]: wideObject(10_000) })]);
      }
      for (const [what, body] of bodies) {
        const answer = await send(
          server.url,
          { method: operation.method, url, contentType: "application/json", body },
          30_000,
        );
        if (typeof answer.status !== "number" || answer.status >= 500) {
          failures.push(`${operation.method} ${operation.path} ${what}: ${answer.status} ${answer.detail}`);
        }
      }
    };
    const queue = operationsOf(doc).filter((operation) => operation.body);
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let operation = queue.shift(); operation; operation = queue.shift()) await check(operation);
      }),
    );
    expect(failures).toEqual([]);
    expect(await busyThreadsAfter(server.url, 30_000)).toEqual([]);
  }, 120_000);
});
