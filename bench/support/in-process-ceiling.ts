/**
 * The `runs` bench's in-process ceiling, in a process of its own so that what earlier bench
 * areas left in the bench process (heap, timers) cannot slow it down: the example graph invoked
 * directly with LangGraph.js and a MemorySaver by `clients` concurrent loops. `--pooled` installs
 * the agent server's pooled `getRandomValues` first.
 *
 * It warms up, prints `ready`, then measures on request so that the bench can interleave its
 * windows with the server's (this machine's speed drifts by half over minutes): each stdin line
 * `<seconds>` is answered with one line `{perSecond, cpuMsPerRun}`; stdin closing ends it.
 */
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { MemorySaver } from "@langchain/langgraph";
import { installPooledRandomValues } from "../../agent-server/src/pooled-random.ts";
import { measureThroughput } from "./measure.ts";

const [clients, warmupSeconds] = process.argv.slice(2, 4).map(Number) as [number, number];
if (process.argv.includes("--pooled")) installPooledRandomValues();
process.env.ECHO_MODEL_PREFIX ??= "You said: ";
const { graph } = await import("../../agent-server/example/src/agent.ts");
const input = { messages: [{ role: "human", content: "how fast is this server?" }] };
let runs = 0;
const invoke = async () => {
  const values = await graph.invoke(input, { configurable: { thread_id: randomUUID() } });
  if (values.messages.length !== 2) throw new Error("the example graph did not answer");
  runs++;
};

graph.checkpointer = new MemorySaver();
await measureThroughput(clients, warmupSeconds * 1000, invoke);
console.log("ready");
for await (const line of createInterface({ input: process.stdin })) {
  // A fresh checkpointer per window: the previous window's threads would only load the heap.
  graph.checkpointer = new MemorySaver();
  runs = 0;
  const cpu = process.cpuUsage();
  const perSecond = await measureThroughput(clients, Number(line) * 1000, invoke);
  const used = process.cpuUsage(cpu);
  console.log(JSON.stringify({ perSecond, cpuMsPerRun: (used.user + used.system) / 1000 / runs }));
}
