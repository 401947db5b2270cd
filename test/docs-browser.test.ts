import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exampleConfig, startTestServer } from "../agent-server/src/graphs/testing/server.ts";
import type { AgentServer } from "../agent-server/src/server.ts";
import { type RunningControlPlane, startControlPlane } from "../control-plane/src/app.ts";
import {
  type Cluster,
  controlPlaneConfig,
  identities,
  startTestCluster,
} from "../control-plane/src/testing/harness.ts";
import { testRedisUrl, uniquePrefix } from "../testing/redis.ts";

// "Try it out" on each service's /docs page, in a real browser: Swagger UI must build the request
// body from the OpenAPI document (it once sent "string" for every body and got 422).
const CHROMIUM = "/usr/bin/chromium";

/** A headless Chromium driven over the DevTools protocol (WebSocket, no client library). */
async function launchChromium(): Promise<{ page: (url: string) => Promise<Page>; close: () => Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), "agentplane-chromium-"));
  const child: ChildProcess = spawn(
    CHROMIUM,
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--remote-debugging-port=0",
      `--user-data-dir=${profile}`,
      "about:blank",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const port = await new Promise<string>((resolve, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk) => {
      stderr += chunk;
      const match = /DevTools listening on ws:\/\/[^:]+:(\d+)\//.exec(stderr);
      if (match) resolve(match[1] as string);
    });
    child.once("exit", (code) => reject(new Error(`chromium exited with ${code}: ${stderr}`)));
  });
  return {
    page: async (url) => {
      const target = (await (await fetch(`http://127.0.0.1:${port}/json/new?${url}`, { method: "PUT" })).json()) as {
        webSocketDebuggerUrl: string;
      };
      const page = await Page.connect(target.webSocketDebuggerUrl);
      await page.loaded(url);
      return page;
    },
    close: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

class Page {
  #socket: WebSocket;
  #next = 0;
  #pending = new Map<number, { resolve: (value: any) => void; reject: (error: Error) => void }>();

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data));
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      if (message.error) pending.reject(new Error(message.error.message));
      else pending.resolve(message.result);
    });
  }

  static async connect(url: string): Promise<Page> {
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.addEventListener("open", resolve, { once: true });
      socket.addEventListener("error", reject, { once: true });
    });
    return new Page(socket);
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<any> {
    const id = ++this.#next;
    this.#socket.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject }));
  }

  /** Runs `source` (an expression, awaited) in the page and returns its JSON value. */
  async evaluate<T>(source: string): Promise<T> {
    const result = await this.send("Runtime.evaluate", { expression: source, awaitPromise: true, returnByValue: true });
    if (result.exceptionDetails) throw new Error(result.exceptionDetails.exception?.description ?? "page error");
    return result.result.value as T;
  }

  /**
   * Waits until the tab shows `url`, loaded. A tab opened on a URL starts on about:blank, and an
   * evaluation there races the navigation: "Execution context was destroyed" when it commits.
   */
  async loaded(url: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const state = await this.evaluate<{ href: string; ready: string }>(
        "({ href: location.href, ready: document.readyState })",
      ).catch(() => undefined);
      if (state?.href.startsWith(url) && state.ready === "complete") return;
      if (Date.now() > deadline) throw new Error(`the tab did not load ${url}: ${JSON.stringify(state)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  close(): void {
    this.#socket.close();
  }
}

/**
 * What a user does on /docs: expand the operation, "Try it out", "Execute" with the example body
 * Swagger UI filled in, read the status it shows.
 */
const tryItOut = (method: string, path: string) => `(async () => {
  const until = async (find, what) => {
    const deadline = Date.now() + 20000;
    for (;;) {
      const found = find();
      if (found) return found;
      if (Date.now() > deadline) throw new Error("timed out waiting for " + what);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const block = await until(
    () => [...document.querySelectorAll(".opblock-${method}")].find(
      (b) => b.querySelector(".opblock-summary-path")?.getAttribute("data-path") === ${JSON.stringify(path)}),
    "the operation",
  );
  (block.querySelector(".opblock-summary-control") ?? block.querySelector(".opblock-summary")).click();
  (await until(() => block.querySelector(".try-out__btn"), "Try it out")).click();
  const body = await until(() => block.querySelector("textarea.body-param__text"), "the body editor");
  (await until(() => block.querySelector(".btn.execute"), "Execute")).click();
  const status = await until(
    () => block.querySelector(".live-responses-table tbody .response-col_status")?.textContent.trim(),
    "the response",
  );
  const response = block.querySelector(".live-responses-table tbody .response-col_description pre")?.textContent ?? "";
  return { status: Number(status), sent: body.value, response };
})()`;

describe.skipIf(!existsSync(CHROMIUM))(
  `"Try it out" on /docs in Chromium${existsSync(CHROMIUM) ? "" : ` (skipped: no ${CHROMIUM}; apt-get install chromium)`}`,
  () => {
    let browser: Awaited<ReturnType<typeof launchChromium>>;
    let agentServer: AgentServer;
    let cluster: Cluster;
    let controlPlane: RunningControlPlane;
    const ids = identities();

    beforeAll(async () => {
      browser = await launchChromium();
      agentServer = await startTestServer(exampleConfig, { redisUrl: testRedisUrl(), prefix: uniquePrefix("docs") });
      cluster = await startTestCluster();
      controlPlane = await startControlPlane(controlPlaneConfig(cluster.kubeconfigPath, ids));
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await agentServer?.close();
      await controlPlane?.close();
      await cluster?.close();
    });

    it("the agent server's POST /threads sends the example thread and gets 200", async () => {
      const page = await browser.page(`${agentServer.url}/docs`);
      try {
        const result = await page.evaluate<{ status: number; sent: string; response: string }>(
          tryItOut("post", "/threads"),
        );
        // Nothing is required to create a thread: Swagger UI starts from the document's `{}`.
        expect(JSON.parse(result.sent)).toEqual({});
        expect(result.status, result.response).toBe(200);
        expect(JSON.parse(result.response)).toHaveProperty("thread_id");
      } finally {
        page.close();
      }
    }, 60_000);

    it("the control plane's POST /v2/auth/providers, authorized with an API key, gets 2xx", async () => {
      const page = await browser.page(`${controlPlane.url}/docs`);
      try {
        // The "Authorize" dialog's effect: the key goes with every request of the page.
        await page.evaluate(`(async () => {
          while (!window.ui?.preauthorizeApiKey || !document.querySelector(".opblock")) await new Promise((r) => setTimeout(r, 100));
          window.ui.preauthorizeApiKey("API Key", ${JSON.stringify(ids.keys.a1)});
        })()`);
        const result = await page.evaluate<{ status: number; sent: string; response: string }>(
          tryItOut("post", "/v2/auth/providers"),
        );
        // Swagger UI's sample of the provider, built from the component's schema.
        expect(JSON.parse(result.sent)).toMatchObject({ provider_id: expect.any(String), client_id: "string" });
        expect(result.status, result.response).toBeGreaterThanOrEqual(200);
        expect(result.status, result.response).toBeLessThan(300);
      } finally {
        page.close();
      }
    }, 60_000);
  },
);
