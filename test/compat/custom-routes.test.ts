import { describe, expect, it } from "vitest";
import { type ServerUnderTest, sdkSuites, useCompatServers } from "./harness.ts";

/**
 * A project as the LangGraph.js docs write one: Hono custom routes with middleware around the
 * built-in API, `getLogger()` at import time, a graph calling its own server through
 * `new Client()`, a relative webhook, and `LANGGRAPH_CONFIG` in `env`. The project is the
 * agent server's own fixture for these features.
 */
const project = new URL("../../agent-server/src/http/testing/project/langgraph.json", import.meta.url).pathname;
const servers = useCompatServers(project);

/** Status, the custom middleware's header, and the body (JSON, else text) of a request. */
async function call(server: ServerUnderTest, path: string, init: RequestInit = {}) {
  const response = await fetch(`${server.url}${path}`, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: response.status, middleware: response.headers.get("x-custom-middleware"), body };
}

const json = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

sdkSuites((sdk) => {
  describe("Hono custom routes", () => {
    it("middleware wraps built-in routes, intercepts and shadows them; custom routes answer", async () => {
      const { reference } = await servers.compare(sdk, async ({ server }) => {
        const info = await call(server, "/info");
        return {
          info: { status: info.status, middleware: info.middleware },
          shadowed: await call(server, "/ok"),
          blocked: await call(server, "/threads/search", { ...json({}), headers: { "x-block": "yes" } }),
          hello: await call(server, "/custom/hello?name=ada"),
          echo: await call(server, "/custom/echo", json({ a: [1, 2] })),
          stream: await call(server, "/custom/stream"),
        };
      });
      expect(reference).toMatchObject({
        info: { status: 200, middleware: "seen" },
        shadowed: { body: { source: "custom" } },
      });
    });

    it("unmatched paths fall through to the API's 404", async () => {
      const missing = async (kind: "reference" | "ours") =>
        servers.run(kind, sdk, async ({ server }) => call(server, "/custom/none"));
      const [reference, ours] = await Promise.all([missing("reference"), missing("ours")]);
      expect({ ...ours, body: undefined }).toEqual({ ...reference, body: undefined });
      expect(reference).toMatchObject({ status: 404, middleware: "seen" });
      // The body differs on purpose: JSON like every other error here (docs/compatibility.md).
      expect(ours.body).toEqual({ detail: "Not Found" });
    });

    it("built-in runs stream through the app's middleware", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const events: string[] = [];
        for await (const part of client.runs.stream(null, "agent", { input: { name: "Sam" }, streamMode: "values" })) {
          events.push(part.event);
        }
        return events;
      });
    });
  });

  describe("project settings and the in-process client", () => {
    it("LANGGRAPH_CONFIG sets the default assistant's config and context", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const [agent] = await client.assistants.search({ graphId: "agent" });
        const run = await client.runs.wait(null, "agent", { input: { name: "Ada" } });
        return { config: agent?.config, context: agent?.context, run };
      });
    });

    it("new Client() without apiUrl reaches the server, from a graph and from a custom route", async () => {
      await servers.compare(sdk, async ({ client, server }) => ({
        fromGraph: await client.runs.wait(null, "caller", { input: { name: "Bo" } }),
        fromRoute: await call(server, "/custom/assistants"),
      }));
    });

    it("a relative webhook reaches the project's route", async () => {
      await servers.compare(sdk, async ({ client, server }) => {
        const thread = await client.threads.create();
        const run = await client.runs.create(thread.thread_id, "agent", {
          input: { name: "Hook" },
          webhook: "/hooks/done",
        });
        const deadline = Date.now() + 10_000;
        for (;;) {
          const deliveries = (await call(server, "/hooks/deliveries")).body as Record<string, unknown>[];
          const delivery = deliveries.find((d) => d.run_id === run.run_id);
          if (delivery) return { status: delivery.status, values: delivery.values, thread: delivery.thread_id };
          if (Date.now() > deadline) throw new Error(`no webhook delivery on ${server.url}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      });
    });
  });
});
