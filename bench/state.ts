import { measureHttpThroughput } from "./support/http-load.ts";
import { round } from "./support/measure.ts";
import { startBenchServer } from "./threads.ts";
import type { BenchResult } from "./types.ts";

const THREADS = 50;
const TURNS = 5;
const CLIENTS = 32;
const SECONDS = 5;
const WARMUP_MS = 1000;

/** A conversation of `TURNS` question/answer pairs, as supersteps: one checkpoint per superstep. */
function conversation(): unknown[] {
  const steps: unknown[] = [];
  for (let turn = 0; turn < TURNS; turn++) {
    const question = { type: "human", content: `question ${turn} `.repeat(20), id: `h${turn}` };
    steps.push({ updates: [{ values: { messages: [question] }, as_node: turn === 0 ? "__input__" : "__start__" }] });
    steps.push({
      updates: [
        {
          values: { messages: [{ type: "ai", content: `answer ${turn} `.repeat(40), id: `a${turn}` }] },
          as_node: "call_model",
        },
      ],
    });
  }
  return steps;
}

/** Thread state and history reads over HTTP against Redis storage, 32 concurrent clients. */
export async function run(redisUrl: string): Promise<BenchResult[]> {
  const server = await startBenchServer(redisUrl, "bench-state:");
  try {
    const threadIds: string[] = [];
    for (let i = 0; i < THREADS; i++) {
      const res = await fetch(`${server.url}/threads`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ metadata: { graph_id: "agent" }, supersteps: conversation() }),
      });
      if (!res.ok) throw new Error(`thread create answered ${res.status}: ${await res.text()}`);
      threadIds.push(((await res.json()) as { thread_id: string }).thread_id);
    }
    // The clients run in a worker thread (node:http, kept-alive), not on the server's event loop.
    const reads = (path: string) => (durationMs: number) =>
      measureHttpThroughput({
        url: threadIds.map((id) => `${server.url}/threads/${id}/${path}`),
        method: "GET",
        concurrency: CLIENTS,
        durationMs,
      });
    const readState = reads("state");
    const readHistory = reads("history?limit=10");
    // Unmeasured first second: JIT warm-up and connection pool growth.
    await readState(WARMUP_MS);
    const stateRate = await readState(SECONDS * 1000);
    await readHistory(WARMUP_MS);
    const historyRate = await readHistory(SECONDS * 1000);
    return [
      { name: "thread state read (32 clients)", value: round(stateRate), unit: "req/s", target: ">= 3000" },
      { name: "thread history read, 10 states (32 clients)", value: round(historyRate), unit: "req/s" },
    ];
  } finally {
    await server.close();
  }
}
