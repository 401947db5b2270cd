import { Client } from "@langchain/langgraph-sdk";
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";

/** Custom routes the way the LangGraph.js docs write them: a Hono app. */
export const app = new Hono();

// Wraps every response, the built-in API's included.
app.use(async (c, next) => {
  await next();
  c.header("x-custom-middleware", "seen");
});

// Intercepts a built-in path before the API sees it.
app.use("/threads/*", async (c, next) => {
  if (c.req.header("x-block") === "yes") return c.json({ detail: "blocked by custom middleware" }, 403);
  await next();
});

// Shadows a built-in route.
app.get("/ok", (c) => c.json({ ok: true, source: "custom" }));

app.get("/custom/hello", (c) => c.json({ hello: c.req.query("name") ?? "world" }));

app.post("/custom/echo", async (c) => c.json({ received: await c.req.json() }));

app.get("/custom/stream", (c) =>
  streamSSE(c, async (stream) => {
    for (let i = 0; i < 3; i++) {
      await stream.writeSSE({ event: "tick", data: String(i) });
      await stream.sleep(150);
    }
  }),
);

// The SDK client without apiUrl reaches the server this route runs in.
app.get("/custom/assistants", async (c) => {
  const assistants = await new Client().assistants.search({ graphId: "agent" });
  return c.json({ count: assistants.length, config: assistants[0]?.config, context: assistants[0]?.context });
});

// Receives relative webhooks ("/hooks/done").
const deliveries: unknown[] = [];
app.post("/hooks/done", async (c) => {
  deliveries.push(await c.req.json());
  return c.json({ ok: true });
});
app.get("/hooks/deliveries", (c) => c.json(deliveries));
