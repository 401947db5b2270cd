import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { ProtocolEvent } from "../../agent-server/src/thread-stream/events.ts";
import { latestSdk } from "../../agent-server/src/thread-stream/testing/sdk.ts";
import {
  agentsProject,
  type ClientClass,
  type SdkUnderTest,
  type ServerUnderTest,
  useCompatServers,
} from "./harness.ts";

/**
 * The thread-centric protocol (`client.threads.stream`, SDK ≥ 1.13) on both servers: the event
 * sequence a subscription receives for the same graph and input, over each transport. Sequence
 * numbers and event ids are numbered by position (each server numbers its own way; only their
 * order matters), timestamps dropped.
 */

const servers = useCompatServers(agentsProject);
const latest = await latestSdk();
// The root SDK is the 2.x line without the protocol; the 1.x one beside @langchain/langgraph has it.
const sdk: SdkUnderTest = {
  name: "@langchain/langgraph's @langchain/langgraph-sdk",
  version: latest.version,
  Client: latest.Client as unknown as ClientClass,
};

type LatestThread = ReturnType<InstanceType<typeof latest.Client>["threads"]["stream"]>;

const CHANNELS = ["values", "updates", "messages", "tools", "lifecycle", "input"];

/**
 * Every event of one subscription until the root lifecycle ends the run, in sequence order,
 * without the numbers. The reference delivers replayed and live events interleaved (out of
 * sequence order); ours must deliver them in order.
 */
async function sequence(thread: LatestThread, server: ServerUnderTest): Promise<unknown[]> {
  const subscription = await thread.subscribe({ channels: CHANNELS as never });
  const events: ProtocolEvent[] = [];
  for await (const event of subscription as AsyncIterable<ProtocolEvent>) {
    events.push(event);
    const data = event.params.data as { event?: string };
    if (event.method === "lifecycle" && event.params.namespace.length === 0 && data.event !== "running") break;
  }
  const sorted = [...events].sort((x, y) => x.seq - y.seq);
  if (server.kind === "ours") expect(events).toEqual(sorted);
  expect(new Set(events.map((event) => event.event_id)).size).toBe(events.length);
  return sorted.map(({ seq: _seq, event_id: _id, ...event }) => withoutToolMessageId(event));
}

/**
 * The reference serialises a `tool-finished` event after the state's message reducer gave its
 * tool message an id (it is the same object); ours stores the event as the tool returned it.
 */
function withoutToolMessageId<E extends { method: string; params: { data: unknown } }>(event: E): E {
  const data = event.params.data as { event?: string; output?: Record<string, unknown> };
  if (event.method !== "tools" || data.event !== "tool-finished" || !data.output) return event;
  const { id: _id, ...output } = data.output;
  return { ...event, params: { ...event.params, data: { ...data, output } } };
}

const ignoreKeys = { timestamp: "each server stamps events with its own clock" };

const CHAT_INPUT = { input: { messages: [{ role: "user", content: "weather?" }] } };

/**
 * A fetch that holds back the SDK's second SSE stream, the one it rotates to when a subscription
 * wants more channels than the stream `run.start` opened, until that first stream has delivered
 * the run's end: the window in which a run that ends before the client's rotation finishes has
 * its terminal event fanned out to the new subscription before any of its own events.
 */
function delayingRotation(): typeof fetch {
  let ended: () => void = () => undefined;
  const firstStreamEnded = new Promise<void>((resolve) => {
    ended = resolve;
  });
  let streams = 0;
  return async (input, init) => {
    if (!String(input).endsWith("/stream/events")) return fetch(input, init);
    streams += 1;
    if (streams > 1) {
      await firstStreamEnded;
      // One macrotask more: the SDK fans the terminal event out before the rotation resumes.
      await new Promise((resolve) => setTimeout(resolve, 50));
      return fetch(input, init);
    }
    const response = await fetch(input, init);
    const decoder = new TextDecoder();
    let seen = "";
    const watched = (response.body as ReadableStream<Uint8Array>).pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen = (seen + decoder.decode(chunk, { stream: true })).slice(-200);
          if (/"event":"(completed|interrupted|failed)"/.test(seen)) ended();
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(watched, { status: response.status, headers: response.headers });
  };
}

for (const transport of ["sse", "websocket"] as const) {
  describe(`thread stream over ${transport}, ${sdk.name} ${sdk.version}`, () => {
    const open = (client: unknown, assistantId: string, threadId = randomUUID(), fetchImpl?: typeof fetch) =>
      (client as InstanceType<typeof latest.Client>).threads.stream(threadId, {
        assistantId,
        transport,
        ...(fetchImpl && { fetch: fetchImpl }),
      } as never);

    // Over SSE the SDK opens a stream at run.start and rotates to a wider one for a later
    // subscription; a run that ends before the rotation reaches that subscription through the
    // first stream only (see the race below), on either server. The socket has no rotation. A
    // stream open during the run is not compared: the reference's live SSE events sometimes carry
    // state messages in LangChain's serialised form instead of the protocol's (docs/compatibility.md).
    it.runIf(transport === "websocket")("sends the same events for a run with a tool call and tokens", async () => {
      const { ours } = await servers.compare(
        sdk,
        async ({ client, server }) => {
          const thread = open(client, "chat");
          await thread.run.start(CHAT_INPUT);
          const events = await sequence(thread, server);
          await thread.close();
          return events;
        },
        { ignoreKeys },
      );
      expect((ours as { method: string }[]).map((event) => event.method)).toEqual(
        expect.arrayContaining(["lifecycle", "messages", "tools", "values", "updates"]),
      );
    });

    it.runIf(transport === "sse")("replays the same events to a subscription opened after the run", async () => {
      const { ours } = await servers.compare(
        sdk,
        async ({ client, server }) => {
          const thread = open(client, "chat");
          await thread.run.start(CHAT_INPUT);
          await thread.output;
          const events = await sequence(thread, server);
          await thread.close();
          return events;
        },
        { ignoreKeys },
      );
      expect((ours as { method: string }[]).map((event) => event.method)).toEqual(
        expect.arrayContaining(["lifecycle", "messages", "tools", "values", "updates"]),
      );
    });

    // The SDK's rotation race, made certain: the wider stream opens only after the first one
    // delivered the run's end. Both servers then give the subscription the first stream's
    // channels only: the gap is the SDK's, not a stream's (docs/compatibility.md).
    it.runIf(transport === "sse")(
      "gives a subscription the same events when the SDK's rotated stream opens after the run",
      async () => {
        const { ours } = await servers.compare(
          sdk,
          async ({ client, server }) => {
            const thread = open(client, "chat", randomUUID(), delayingRotation());
            await thread.run.start(CHAT_INPUT);
            const events = await sequence(thread, server);
            await thread.close();
            return events;
          },
          { ignoreKeys },
        );
        const methods = new Set((ours as { method: string }[]).map((event) => event.method));
        expect([...methods].sort()).toEqual(["lifecycle", "values"]);
      },
    );

    // Over SSE the reference's sequence for this graph has artifacts of its own (a subgraph
    // `values` event with the namespace `[undefined]`), so it is compared over the socket only.
    it.runIf(transport === "websocket")(
      "sends the same events for an interrupt in a subgraph and its answer",
      async () => {
        const { ours } = await servers.compare(
          sdk,
          async ({ client, server }) => {
            const thread = open(client, "review");
            await thread.run.start({ input: { topic: "otters" } });
            const asked = await sequence(thread, server);
            const request = asked.find((event) => (event as { method: string }).method === "input.requested") as
              | { params: { namespace: string[]; data: { interrupt_id: string } } }
              | undefined;
            await thread.input.respond({
              namespace: request?.params.namespace ?? [],
              interrupt_id: request?.params.data.interrupt_id ?? "",
              response: "yes",
            });
            const answered = await sequence(thread, server);
            await thread.close();
            return { asked, answered };
          },
          { ignoreKeys },
        );
        expect(JSON.stringify(ours)).toContain("input.requested");
      },
    );

    // The run's messages are v1 (content blocks): the HTTP state is compared for them too.
    it("answers state.get after a run with the same values and checkpoint, as the HTTP state does", async () => {
      const { ours } = await servers.compare(
        sdk,
        async ({ client, server }) => {
          const thread = open(client, "chat");
          await thread.run.start(CHAT_INPUT);
          await sequence(thread, server);
          const whole = await thread.state.get({ namespace: [] });
          const picked = await thread.state.get({ namespace: [], keys: ["messages"] } as never);
          const http = await (client as unknown as InstanceType<typeof latest.Client>).threads.getState(
            thread.threadId,
          );
          await thread.close();
          return { whole, picked, http: http.values };
        },
        { ignoreKeys: { ...ignoreKeys, tool_call_chunks: "the reference's chat model always streams" } },
      );
      const { whole } = ours as { whole: { values: { messages: unknown[] }; checkpoint: { id: string } } };
      expect(whole.values.messages.length).toBeGreaterThan(2);
      expect(JSON.stringify(whole)).toContain('"content_blocks"');
      expect(whole.checkpoint.id).toBeDefined();
    });

    it.runIf(transport === "websocket")(
      "answers agent.getTree, input.inject and subscription.reconnect as the reference does",
      async () => {
        const { ours } = await servers.compare(sdk, async ({ client, server }) => {
          const thread = open(client, "review");
          await thread.run.start({ input: { topic: "otters" } });
          await sequence(thread, server);
          const { tree } = (await thread.agent.getTree()) as { tree: TreeNode };
          const inject = await thread.input.inject({ namespace: [], message: { role: "user", content: "hi" } }).then(
            () => "answered",
            (error: { code?: string; message: string }) => ({ code: error.code, message: error.message }),
          );
          // The SDK has no method for it: sent as its HTTP transport sends commands.
          const response = await fetch(`${server.url}/threads/${thread.threadId}/commands`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ id: 99, method: "subscription.reconnect", params: { run_id: "x" } }),
          });
          const { type, error, message } = (await response.json()) as Record<string, unknown>;
          await thread.close();
          return { tree: canonicalTree(tree), inject, reconnect: { type, error, message } };
        });
        expect(ours).toMatchObject({
          tree: { graph_name: "review", children: expect.any(Array) },
          inject: { code: "unknown_command" },
          reconnect: { type: "error", error: "not_supported" },
        });
      },
    );
  });
}

interface TreeNode {
  namespace: string[];
  status: string;
  graph_name: string;
  children?: TreeNode[];
}

/**
 * A tree without its task ids (`node:<task id>` → `node`), children in name order: each server
 * derives other task ids, and the reference orders siblings by them.
 */
function canonicalTree(node: TreeNode): unknown {
  const children = (node.children ?? []).map(canonicalTree) as { namespace: string[]; status: string }[];
  children.sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
  return {
    namespace: node.namespace.map((segment) => segment.split(":")[0]),
    status: node.status,
    graph_name: node.graph_name,
    ...(children.length > 0 && { children }),
  };
}
