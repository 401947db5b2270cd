import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, spawnServer } from "../agent-server/src/runs/testing/process.ts";
import { type Answer, busyThreadsAfter, call, send } from "../testing/fuzz-client.ts";
import { BadRequests, type OpenApiDocument, operationsOf, Random } from "../testing/openapi-fuzz.ts";
import { testRedisUrl, uniquePrefix } from "../testing/redis.ts";

/**
 * Bad requests against every operation of a real agent server (its own process, on Redis),
 * generated from its `/openapi.json` with a seeded PRNG: FUZZ_SEED=<seed> replays a run (the
 * same requests in the same order), FUZZ_REQUESTS sets how many (default 5,000) and FUZZ_MS the
 * time budget (at most what keeps the file within 40 s), whichever ends first. The server must
 * answer each with a non-5xx status, stay up, leave no thread busy, and leave the sentinel
 * records as they were. Requests go CONCURRENCY at a time over kept-alive connections.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 5_000);
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 20_000);
const CONCURRENCY = 16;
/** The whole file stays within 40 s: a slow start (a loaded machine) leaves fuzzing less time. */
const FILE_BUDGET_MS = 36_000;
const fileStarted = Date.now();

let server: ServerProcess;
const sentinel = { assistant: "", thread: "", cron: "" };
const json = (method: string, path: string, body?: unknown) => call(server.url, method, path, body);

/** Everything the sentinels are, as the API shows them. */
const snapshot = async () => ({
  assistant: await json("GET", `/assistants/${sentinel.assistant}`),
  thread: await json("GET", `/threads/${sentinel.thread}`),
  state: await json("GET", `/threads/${sentinel.thread}/state`),
  item: await json("GET", "/store/items?namespace=sentinel&key=item"),
  cron: await json("GET", `/runs/crons/${sentinel.cron}`),
});

beforeAll(async () => {
  console.log(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
  server = await spawnServer(testRedisUrl(), uniquePrefix("fuzz"), { N_WORKERS: "4", LOG_LEVEL: "fatal" });
  const assistant = await json("POST", "/assistants", { graph_id: "agent", name: "sentinel", metadata: { s: 1 } });
  sentinel.assistant = String(assistant.assistant_id);
  sentinel.thread = String((await json("POST", "/threads", { metadata: { sentinel: true } })).thread_id);
  // Everything belongs to the sentinel assistant: the fuzzer may delete the graph's default one
  // (`DELETE /assistants/agent?delete_threads=true`), with its threads and crons, as it should.
  await json("POST", `/threads/${sentinel.thread}/runs/wait`, {
    assistant_id: sentinel.assistant,
    input: { messages: [{ type: "human", content: "remember me" }] },
  });
  await json("PUT", "/store/items", { namespace: ["sentinel"], key: "item", value: { kept: true } });
  sentinel.cron = String(
    (await json("POST", "/runs/crons", { assistant_id: sentinel.assistant, schedule: "0 0 1 1 *" })).cron_id,
  );
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe(`OpenAPI-driven fuzzing (seed ${SEED})`, () => {
  it("answers thousands of bad requests without a 5xx, stays up and keeps the sentinels intact", async () => {
    const before = await snapshot();
    const doc = (await json("GET", "/openapi.json")) as unknown as OpenApiDocument;
    const operations = operationsOf(doc);
    const random = new Random(SEED);
    const generator = new BadRequests(random, doc, Object.values(sentinel));
    const statuses = new Map<Answer["status"], number>();
    const failures: string[] = [];
    const budget = Math.max(5_000, Math.min(BUDGET_MS, FILE_BUDGET_MS - (Date.now() - fileStarted)));
    const started = Date.now();
    const deadline = started + budget;
    let sent = 0;
    const worker = async () => {
      while (Date.now() < deadline && sent < REQUESTS) {
        const request = generator.request(random.pick(operations));
        sent++;
        const answer = await send(server.url, request);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status === "network" || (typeof answer.status === "number" && answer.status >= 500)) {
          failures.push(`${request.method} ${request.url.slice(0, 200)} → ${answer.status} ${answer.detail}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const took = Date.now() - started;
    console.log(`fuzz seed ${SEED}: ${sent} requests in ${took} ms (budget ${budget})`, Object.fromEntries(statuses));
    expect(failures.slice(0, 20)).toEqual([]);
    expect(server.child.exitCode).toBeNull();
    expect((await fetch(`${server.url}/ok?check_db=1`)).status).toBe(200);
    expect(await snapshot()).toEqual(before);
    expect(await busyThreadsAfter(server.url, 15_000)).toEqual([]);
  }, 60_000);
});
