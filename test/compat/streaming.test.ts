import type { Client } from "@langchain/langgraph-sdk";
import { describe, expect, it } from "vitest";
import { agentsProject, collect, sdkSuites, useCompatServers } from "./harness.ts";

/** Every stream mode, alone and in pairs, on a tool loop and on a subgraph: the same events in the same order. */

const servers = useCompatServers(agentsProject);

const MODES = [
  "values",
  "updates",
  "messages",
  "messages-tuple",
  "custom",
  "events",
  "debug",
  "checkpoints",
  "tasks",
] as const;
type Mode = (typeof MODES)[number];

const pairs: Mode[][] = MODES.flatMap((first, i) => MODES.slice(i + 1).map((second) => [first, second]));

/** One run of the tool loop on a new thread. */
async function chat(client: Client, streamMode: Mode[], streamSubgraphs = false) {
  const thread = await client.threads.create();
  return collect(
    client.runs.stream(thread.thread_id, "chat", {
      input: { messages: [{ role: "user", content: "What is the weather in Paris?", id: "human-1" }] },
      streamMode,
      streamSubgraphs,
    }),
  );
}

/** The review graph up to its interrupt inside the subgraph, then resumed. */
async function review(client: Client, streamMode: Mode[], streamSubgraphs: boolean) {
  const thread = await client.threads.create();
  const options = { streamMode, streamSubgraphs };
  const asked = await collect(
    client.runs.stream(thread.thread_id, "review", { input: { topic: "otters" }, ...options }),
  );
  const resumed = await collect(
    client.runs.stream(thread.thread_id, "review", { command: { resume: "yes" }, ...options }),
  );
  return { asked, resumed };
}

const names = (events: { event: string }[]) => events.map(({ event }) => event);

/**
 * A `checkpoints` event as the reference sends it: `{values, metadata, next}`. Ours also has the
 * `config`, `parent_config` and `tasks` the SDK's type declares (docs/compatibility.md).
 */
const asReferenceCheckpoints = (events: { event: string; data: unknown }[]) =>
  events.map(({ event, data }) => {
    if (!event.startsWith("checkpoints") || !data || typeof data !== "object" || !("values" in data)) {
      return { event, data };
    }
    const { values, metadata, next } = data as Record<string, unknown>;
    return { event, data: { values, metadata, next } };
  });

/**
 * Payloads compared in full where both servers produce them from the same graph chunks; `events`
 * and `debug` carry what differs by design (LangSmith metadata, serialisation of LangChain
 * objects), so for them the names and order are compared.
 */
const FULL_PAYLOADS = new Set<Mode>([
  "values",
  "updates",
  "messages",
  "messages-tuple",
  "custom",
  "tasks",
  "checkpoints",
]);

/**
 * The reference always runs graphs through `streamEvents`, so chat models always stream: AI
 * messages in the state are concatenated chunks (with `tool_call_chunks`) and LangGraph names
 * tool messages `run-<run>-tool-<call>`. Ours streams chat models when a messages mode asks for
 * tokens (docs/compatibility.md); the chat graph's payloads are compared without those two.
 */
const withoutStreamingArtifacts = (events: { event: string; data: unknown }[]) => {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (!value || typeof value !== "object") return value;
    const record = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(record)) {
      if (key === "tool_call_chunks") continue;
      if (key === "id" && record.type === "tool") continue;
      out[key] = strip(item);
    }
    return out;
  };
  return events.map(({ event, data }) => ({ event, data: strip(data) }));
};

sdkSuites.concurrent((sdk) => {
  describe("one mode", () => {
    it.each(MODES)("%s", async (mode) => {
      await servers.compare(sdk, async ({ client }) => {
        const events = await chat(client, [mode]);
        if (!FULL_PAYLOADS.has(mode)) return names(events);
        const compared = asReferenceCheckpoints(events);
        // Token streams carry the same chunks on both servers: compared as they are.
        return mode === "messages-tuple" ? compared : withoutStreamingArtifacts(compared);
      });
    });
  });

  it("every pair of modes: the same events in the same order", { timeout: 60_000 }, async () => {
    await servers.compare(sdk, async ({ client }) => {
      const runs: Record<string, string[]> = {};
      // Nine threads at a time: each run has its own thread, so they do not wait for one another.
      for (let i = 0; i < pairs.length; i += 9) {
        const batch = pairs.slice(i, i + 9);
        const events = await Promise.all(batch.map((pair) => chat(client, pair)));
        batch.forEach((pair, j) => {
          runs[pair.join("+")] = names(events[j] ?? []);
        });
      }
      return runs;
    });
  });

  it('["messages", "values"] in full: messages/complete after the values event that carries it', async () => {
    await servers.compare(sdk, async ({ client }) =>
      withoutStreamingArtifacts(await chat(client, ["messages", "values"])),
    );
  });

  it("legacy messages with stream_subgraphs: messages/complete on ours only, otherwise the same events", async () => {
    let complete = 0;
    await servers.compare(sdk, async ({ client, server }) => {
      const events = names(await chat(client, ["messages"], true));
      if (server.kind === "ours") complete = events.filter((event) => event === "messages/complete").length;
      // The reference never sends it with subgraphs (it reads subgraph chunks as `[mode, data]`): docs/compatibility.md.
      return events.filter((event) => event !== "messages/complete");
    });
    // One per message: the human's, the tool call, the tool result, the answer.
    expect(complete).toBe(4);
  });

  describe("a subgraph with an interrupt", () => {
    // Values and updates alone are parts of the first set; a few sets keep the file's time down.
    it.each([[["values", "updates"]], [["updates", "custom", "tasks"]], [["checkpoints"]]] as Mode[][][])(
      "%j with and without subgraphs",
      async (modes) => {
        await servers.compare(sdk, async ({ client }) => {
          const flat = await review(client, modes, false);
          const nested = await review(client, modes, true);
          return [flat.asked, flat.resumed, nested.asked, nested.resumed].map(asReferenceCheckpoints);
        });
      },
    );
  });
});
