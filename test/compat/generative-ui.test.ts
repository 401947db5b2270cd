import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, type PageServer, servePage } from "./browser/ui-page.ts";
import { collect, type ServerKind, type ServerUnderTest, sdkSuites, useCompatServers } from "./harness.ts";

/**
 * Generative UI as the LangGraph.js docs write it: components in a `.tsx` file named by `ui` in
 * `langgraph.json`, a graph pushing UI messages with `typedUi`: what the SDK receives, and what a
 * page using `LoadExternalComponent` renders from it in Chromium.
 */
const project = new URL("./projects/generative-ui/langgraph.json", import.meta.url).pathname;
const servers = useCompatServers(project);

/** The SDK's own call behind `LoadExternalComponent` (`POST /ui/{namespace}`, body `{ name }`). */
interface UiClient {
  getComponent(namespace: string, name: string): Promise<string>;
}

/** The HTML with the server's address as a placeholder, and the assets it points to. */
async function component(server: ServerUnderTest, client: unknown, name: string) {
  const html = await (client as { "~ui": UiClient })["~ui"].getComponent("weather", name);
  const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string);
  const assets = await Promise.all(
    urls.map(async (url) => {
      const response = await fetch(url);
      const text = await response.text();
      return {
        url: url.replace(server.url, "<server>"),
        status: response.status,
        type: response.headers.get("content-type")?.split(";")[0],
        // The bundles differ byte for byte (esbuild settings, Tailwind on the reference); what
        // the page relies on must be in both.
        renders: text.includes("__LGUI_weather") && text.includes("LGUI_REQUIRE") && text.includes("weather-card"),
        styles: text.includes(".weather-card"),
      };
    }),
  );
  return { html: html.replaceAll(server.url, "<server>"), assets };
}

sdkSuites((sdk) => {
  it("POST /ui/{graph} returns the same HTML, and its script and stylesheet load", async () => {
    const { ours } = await servers.compare(sdk, async ({ server, client }) => component(server, client, "weather"));
    expect(ours).toEqual({
      html: [
        '<link rel="stylesheet" href="<server>/ui/weather/entrypoint.css" />',
        `<script src="<server>/ui/weather/entrypoint.js" onload='__LGUI_weather.render("weather", "{{shadowRootId}}")'></script>`,
      ].join("\n"),
      assets: [
        { url: "<server>/ui/weather/entrypoint.css", status: 200, type: "text/css", renders: false, styles: true },
        {
          url: "<server>/ui/weather/entrypoint.js",
          status: 200,
          type: "text/javascript",
          renders: true,
          styles: false,
        },
      ],
    });
  });

  it("an unknown namespace or file is a 404", async () => {
    const statuses = (kind: "reference" | "ours") =>
      servers.run(kind, sdk, async ({ server }) => ({
        namespace: (
          await fetch(`${server.url}/ui/nowhere`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ name: "weather" }),
          })
        ).status,
        file: (await fetch(`${server.url}/ui/weather/missing.js`)).status,
      }));
    const [reference, ours] = await Promise.all([statuses("reference"), statuses("ours")]);
    expect(ours).toEqual(reference);
    expect(ours).toEqual({ namespace: 404, file: 404 });
  });

  it("a graph's typedUi push streams as a custom event and lands in the ui state", async () => {
    const { ours } = await servers.compare(sdk, async ({ client }) => {
      const thread = await client.threads.create();
      const events = await collect(
        client.runs.stream(thread.thread_id, "weather", {
          input: { city: "Paris" },
          streamMode: ["custom", "values"],
        }),
      );
      // Ours also carries the node's name as `metadata.name` (typedUi copies `config.runName`,
      // which the reference's callbacks reset): a known difference, see docs/compatibility.md.
      const withoutName = (message: { metadata?: Record<string, unknown> }) => {
        const { name: _name, ...metadata } = message.metadata ?? {};
        return { ...message, metadata };
      };
      type Message = { metadata?: Record<string, unknown> };
      return {
        events: events.map(({ event, data }) => {
          if (event === "custom") return { event, data: withoutName(data as Message) };
          const values = data as { ui?: Message[] };
          if (event === "values" && values.ui) return { event, data: { ...values, ui: values.ui.map(withoutName) } };
          return { event, data };
        }),
      };
    });
    const message = {
      type: "ui",
      id: "weather-Paris",
      name: "weather",
      props: { city: "Paris", temperature: 21 },
      metadata: { run_id: "<uuid:1>" },
    };
    expect(ours).toMatchObject({
      events: [
        { event: "metadata", data: { run_id: "<uuid:1>" } },
        { event: "values", data: { city: "Paris", ui: [] } },
        { event: "custom", data: message },
        { event: "values", data: { city: "Paris", ui: [message] } },
      ],
    });
  });
});

/** What the browser side uses (this file is type-checked without the DOM library). */
interface BrowserWindow {
  getComputedStyle(element: unknown): { color: string };
}

describe("in a browser", () => {
  let page: PageServer;
  beforeAll(async () => {
    page = await servePage();
  });
  afterAll(() => page?.close());

  /** What the page shows once the graph pushed its UI message, after a click on the component, and once the run ended. */
  async function render(kind: ServerKind) {
    const browser = await launchChromium();
    try {
      const tab = await browser.newPage();
      await tab.goto(`${page.url}?api=${encodeURIComponent(servers[kind].url)}`);
      // Inside the shadow root LoadExternalComponent renders into (playwright's locators pierce it).
      const card = tab.locator(".weather-card");
      await card.waitFor({ timeout: 30_000 });
      const shown = await card.textContent();
      await card.click();
      await tab.getByText("clicked 1").waitFor({ timeout: 10_000 });
      // The run may still be streaming when the card appears; compare what the user sees once it
      // ends (a server whose run never finishes fails here rather than comparing mid-run).
      await tab.locator("#status", { hasText: /^done$/ }).waitFor({ timeout: 30_000 });
      return {
        shown,
        clicked: await card.textContent(),
        color: await card.evaluate(
          (element) => (globalThis as unknown as BrowserWindow).getComputedStyle(element).color,
        ),
        status: await tab.locator("#status").textContent(),
      };
    } finally {
      await browser.close();
    }
  }

  it("LoadExternalComponent renders the pushed component with the page's React, stream context and CSS", async () => {
    const ours = await render("ours");
    expect(ours).toEqual(await render("reference"));
    expect(ours).toEqual({
      shown: "Weather in Lisbon: 21°C on the test page, clicked 0",
      clicked: "Weather in Lisbon: 21°C on the test page, clicked 1",
      // ui.css, loaded by the component's <link> into the shadow root.
      color: "rgb(0, 128, 0)",
      status: "done",
    });
  }, 90_000);
});
