import { createLogger } from "@agentplane/common";
import { type CoreV1Api, KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { startKubeApiServer } from "../../../testing/kube-apiserver/server.ts";
import { freePort } from "../../../testing/redis-server.ts";
import { WatchedCollection } from "./cache.ts";
import { createKubeClients } from "./client.ts";

const LABEL = "agentplane.dev/deployment-id";
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function cluster(port: number) {
  const server = await startKubeApiServer({ port, namespaces: ["default", "agents"] });
  const config = new KubeConfig();
  config.loadFromFile(server.kubeconfigPath);
  return { server, config, core: createKubeClients(config).core };
}

function secrets(config: KubeConfig, core: CoreV1Api) {
  const collection = new WatchedCollection<V1Secret>(
    config,
    ["agents"],
    {
      path: (namespace) => `/api/v1/namespaces/${namespace}/secrets`,
      list: (namespace) => core.listNamespacedSecret({ namespace: namespace ?? "agents", labelSelector: LABEL }),
    },
    LABEL,
    createLogger("cache-test", "silent"),
  );
  cleanups.push(() => collection.stop());
  return collection;
}

const secret = (name: string, value: string): V1Secret => ({
  metadata: { name, namespace: "agents", labels: { [LABEL]: name } },
  data: { V: Buffer.from(value).toString("base64") },
});

describe("WatchedCollection", () => {
  it("is stale until the first list, then serves this process's writes as soon as they return", async () => {
    const { server, config, core } = await cluster(0);
    cleanups.push(() => server.close());
    await core.createNamespacedSecret({ namespace: "agents", body: secret("before", "1") });
    await core.createNamespacedSecret({
      namespace: "agents",
      body: { metadata: { name: "unlabelled", namespace: "agents" }, data: {} },
    });
    const cache = secrets(config, core);
    expect(await cache.fresh()).toBe(false);
    cache.start();
    await expect.poll(() => cache.fresh()).toBe(true);
    expect(cache.list("agents").map((s) => s.metadata?.name)).toEqual(["before"]);

    for (let i = 0; i < 20; i++) {
      const created = await core.createNamespacedSecret({ namespace: "agents", body: secret(`s${i}`, "1") });
      cache.written(created);
      const replaced = await core.replaceNamespacedSecret({
        namespace: "agents",
        name: `s${i}`,
        body: { ...secret(`s${i}`, "2"), metadata: { ...created.metadata } },
      });
      cache.written(replaced);
      expect(await cache.fresh()).toBe(true);
      expect(cache.get("agents", `s${i}`)?.metadata?.resourceVersion).toBe(replaced.metadata?.resourceVersion);
      await core.deleteNamespacedSecret({ namespace: "agents", name: `s${i}` });
      cache.written({ metadata: { namespace: "agents", name: `s${i}` } }, true);
      expect(await cache.fresh()).toBe(true);
      expect(cache.get("agents", `s${i}`)).toBeUndefined();
    }
  });

  it("reports itself stale while the API server is away and catches up after it returns", async () => {
    const port = await freePort();
    const first = await cluster(port);
    const cache = secrets(first.config, first.core);
    cache.start();
    await expect.poll(() => cache.fresh()).toBe(true);
    await first.server.close();
    await expect.poll(() => cache.fresh(), { timeout: 10_000 }).toBe(false);

    const second = await cluster(port);
    cleanups.push(() => second.server.close());
    await second.core.createNamespacedSecret({ namespace: "agents", body: secret("after-restart", "1") });
    await expect.poll(() => cache.fresh(), { timeout: 10_000 }).toBe(true);
    await expect
      .poll(() => cache.list("agents").map((s) => s.metadata?.name), { timeout: 10_000 })
      .toEqual(["after-restart"]);
  });
});
