import type { Client } from "@langchain/langgraph-sdk";
import { describe, expect, it } from "vitest";
import {
  type ScenarioContext,
  type SdkUnderTest,
  type ServerUnderTest,
  sdkSuites,
  useCompatServers,
} from "./harness.ts";

/**
 * Custom auth on both servers, from the same `auth.ts` (the ownership model of the LangGraph.js
 * custom-auth guide, see the fixture): two users, every endpoint group the reference implements,
 * and each of Bob's attempts on Alice's resources must get the reference's status. Crons are left
 * out: the reference answers every cron endpoint with 500 "Not implemented" (our two-replica test
 * covers them).
 */
const project = new URL("../../agent-server/src/custom-auth/testing/project/langgraph.json", import.meta.url).pathname;
const servers = useCompatServers(project);

const userClient = (sdk: SdkUnderTest, server: ServerUnderTest, token: string): Client =>
  new sdk.Client({
    apiUrl: server.url,
    defaultHeaders: { authorization: `Bearer ${token}` },
    callerOptions: { maxRetries: 0 },
  });

/** The status an SDK call ended with: 200 when it resolved, else the HTTP error's. */
async function status(call: () => Promise<unknown>): Promise<number> {
  try {
    await call();
    return 200;
  } catch (error) {
    const code = (error as { status?: number }).status;
    if (typeof code !== "number") throw error;
    return code;
  }
}

async function drain(stream: AsyncIterable<{ event: string; data: unknown }>) {
  const events: { event: string; data: unknown }[] = [];
  for await (const chunk of stream) events.push(chunk);
  return events;
}

const plain = async (server: ServerUnderTest, path: string, headers: Record<string, string> = {}) =>
  (await fetch(`${server.url}${path}`, { method: "POST", body: "{}", headers })).status;

sdkSuites((sdk) => {
  describe("custom auth", () => {
    it("authenticates with the project's handler: the user reaches graphs, a bad token is a 401", async () => {
      await servers.compare(sdk, async ({ server }: ScenarioContext) => {
        const alice = userClient(sdk, server, "token-alice");
        const thread = await alice.threads.create({ metadata: { topic: "t" } });
        const values = await alice.runs.wait(thread.thread_id, "whoami", { input: { input: "hi" } });
        return {
          created: thread.metadata,
          values,
          noToken: await plain(server, "/threads/search"),
          badToken: await plain(server, "/threads/search", { authorization: "Bearer nope" }),
        };
      });
    });

    it("gives another user's attempts the reference's status, and shows them nothing", async () => {
      await servers.compare(sdk, async ({ server }: ScenarioContext) => {
        const alice = userClient(sdk, server, "token-alice");
        const bob = userClient(sdk, server, "token-bob");
        const thread = (await alice.threads.create({ metadata: { topic: "secret" } })).thread_id;
        const run = (await alice.runs.create(thread, "whoami", { input: { input: "hi" } })).run_id;
        await alice.runs.join(thread, run);
        const assistant = (await alice.assistants.create({ graphId: "whoami", name: "alice-bot" })).assistant_id;
        await alice.store.putItem(["notes"], "k1", { text: "secret" });

        const statuses = {
          getThread: await status(() => bob.threads.get(thread)),
          patchThread: await status(() => bob.threads.update(thread, { metadata: { owner: "bob" } })),
          deleteThread: await status(() => bob.threads.delete(thread)),
          getState: await status(() => bob.threads.getState(thread)),
          history: await status(() => bob.threads.getHistory(thread)),
          updateState: await status(() => bob.threads.updateState(thread, { values: { input: "x" } })),
          createSameId: await status(() => bob.threads.create({ threadId: thread })),
          createSameIdDoNothing: await status(() => bob.threads.create({ threadId: thread, ifExists: "do_nothing" })),
          listRuns: await status(() => bob.runs.list(thread)),
          getRun: await status(() => bob.runs.get(thread, run)),
          createRun: await status(() => bob.runs.create(thread, "whoami", { input: {} })),
          waitRun: await status(() => bob.runs.wait(thread, "whoami", { input: {} })),
          joinRun: await status(() => bob.runs.join(thread, run)),
          cancelRun: await status(() => bob.runs.cancel(thread, run)),
          deleteRun: await status(() => bob.runs.delete(thread, run)),
          getAssistant: await status(() => bob.assistants.get(assistant)),
          patchAssistant: await status(() => bob.assistants.update(assistant, { name: "mine" })),
          deleteAssistant: await status(() => bob.assistants.delete(assistant)),
          assistantVersions: await status(() => bob.assistants.getVersions(assistant)),
          storePut: await status(() => bob.store.putItem(["notes"], "k1", { text: "bob" })),
          storeDelete: await status(() => bob.store.deleteItem(["notes"], "k2")),
        };
        const seen = {
          threads: (await bob.threads.search({ limit: 100 })).length,
          threadsByTopic: (await bob.threads.search({ metadata: { topic: "secret" } })).length,
          threadCount: await bob.threads.count({}),
          assistants: (await bob.assistants.search({ limit: 100 })).length,
          assistantCount: await bob.assistants.count({}),
          storeItem: await bob.store.getItem(["notes"], "k1"),
          // Only whether Alice's item shows: the reference searches the prefix as sent, where ours (as
          // the Python server) searches the one the store handler rewrote, so Bob also finds his own.
          aliceItemsFound: (await bob.store.searchItems(["notes"])).items.filter((item) =>
            JSON.stringify(item).includes("secret"),
          ).length,
          // Alice's item, after Bob's put of the same namespace and key went to his own namespace.
          aliceItem: (await alice.store.getItem(["notes"], "k1"))?.value,
          aliceThread: (await alice.threads.get(thread)).metadata?.topic,
          aliceVersions: (await alice.assistants.getVersions(assistant)).map((v) => [v.version, v.metadata?.owner]),
        };
        return { statuses, seen };
      });
    });

    it("refuses another user's run stream (the reference inside a 200 stream, ours with a 404)", async () => {
      const attempt = (kind: "reference" | "ours") =>
        servers.run(kind, sdk, async ({ server }) => {
          const alice = userClient(sdk, server, "token-alice");
          const bob = userClient(sdk, server, "token-bob");
          const thread = (await alice.threads.create()).thread_id;
          const run = (await alice.runs.create(thread, "whoami", { input: {} })).run_id;
          await alice.runs.join(thread, run);
          try {
            return { events: await drain(bob.runs.joinStream(thread, run)) };
          } catch (error) {
            return { status: (error as { status?: number }).status };
          }
        });
      const [reference, ours] = await Promise.all([attempt("reference"), attempt("ours")]);
      expect(reference).toEqual({
        events: [{ event: "error", data: { error: "Error", message: "404: Thread not found" } }],
      });
      expect(ours).toEqual({ status: 404 });
    });
  });
});
