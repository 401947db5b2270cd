import { makeInformer, type V1ConfigMap, Watch } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agd, agentDeployment, eventually, startWithClients } from "./clients.ts";

let env: Awaited<ReturnType<typeof startWithClients>>;
const ns = "watching";

beforeAll(async () => {
  env = await startWithClients({ retainedEvents: 50, bookmarkIntervalMs: 50 });
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
});
afterAll(() => env.kube.close());

interface Seen {
  type: string;
  name?: string;
  resourceVersion?: string;
  object: any;
}

/** Opens a watch and records its events until the returned stop() is called. */
async function record(path: string, query: Record<string, string | number | boolean | undefined>) {
  const events: Seen[] = [];
  let ended: unknown = "open";
  const request = await new Watch(env.kc).watch(
    path,
    query,
    (type, object) =>
      events.push({ type, name: object?.metadata?.name, resourceVersion: object?.metadata?.resourceVersion, object }),
    (error) => {
      ended = error;
    },
  );
  return { events, stop: () => request.abort(), ended: () => ended };
}

const cm = (name: string, labels: Record<string, string> = {}) => ({ metadata: { name, labels } });

describe("watch", () => {
  it("streams ADDED, MODIFIED and DELETED and resumes from a resourceVersion", async () => {
    const list = await env.core.listNamespacedConfigMap({ namespace: ns });
    const watch = await record(`/api/v1/namespaces/${ns}/configmaps`, {
      resourceVersion: list.metadata!.resourceVersion,
    });
    await env.core.createNamespacedConfigMap({ namespace: ns, body: cm("a") });
    await env.core.patchNamespacedConfigMap({
      namespace: ns,
      name: "a",
      body: [{ op: "add", path: "/data", value: { k: "v" } }],
    });
    await env.core.deleteNamespacedConfigMap({ namespace: ns, name: "a" });
    await eventually(
      () => watch.events.length,
      (n) => n >= 3,
    );
    watch.stop();
    expect(watch.events.map((e) => `${e.type} ${e.name}`)).toEqual(["ADDED a", "MODIFIED a", "DELETED a"]);

    const resumed = await record(`/api/v1/namespaces/${ns}/configmaps`, {
      resourceVersion: watch.events[0]!.resourceVersion,
    });
    await eventually(
      () => resumed.events.length,
      (n) => n >= 2,
    );
    resumed.stop();
    expect(resumed.events.map((e) => e.type)).toEqual(["MODIFIED", "DELETED"]);
  });

  it("starts with the current objects when no resourceVersion is given", async () => {
    await env.core.createNamespacedConfigMap({ namespace: ns, body: cm("existing") });
    const watch = await record(`/api/v1/namespaces/${ns}/configmaps`, {});
    await eventually(
      () => watch.events.length,
      (n) => n >= 1,
    );
    watch.stop();
    expect(watch.events[0]).toMatchObject({ type: "ADDED", name: "existing" });
  });

  it("answers a resourceVersion older than the retained history with a 410 Expired ERROR event", async () => {
    const old = (await env.core.listNamespacedConfigMap({ namespace: ns })).metadata!.resourceVersion;
    await env.core.createNamespacedConfigMap({ namespace: ns, body: cm("before-compaction") });
    env.kube.api.store.compact();
    await env.core.createNamespacedConfigMap({ namespace: ns, body: cm("after-compaction") });
    const watch = await record(`/api/v1/namespaces/${ns}/configmaps`, { resourceVersion: old });
    await eventually(
      () => watch.ended(),
      (e) => e !== "open",
    );
    expect(watch.events).toHaveLength(1);
    expect(watch.events[0]).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
  });

  it("sends BOOKMARK events when allowed", async () => {
    const watch = await record(`/api/v1/namespaces/${ns}/configmaps`, {
      allowWatchBookmarks: true,
      resourceVersion: "0",
    });
    const bookmark = await eventually(() => watch.events.find((e) => e.type === "BOOKMARK"), Boolean);
    watch.stop();
    expect(Number(bookmark?.resourceVersion)).toBe(env.kube.api.store.resourceVersion);
  });

  it("applies label selectors to changes: objects leaving the selection are DELETED, entering ADDED", async () => {
    const start = (await env.core.listNamespacedConfigMap({ namespace: ns })).metadata!.resourceVersion;
    const watch = await record(`/api/v1/namespaces/${ns}/configmaps`, {
      resourceVersion: start,
      labelSelector: "app=x",
    });
    await env.core.createNamespacedConfigMap({ namespace: ns, body: cm("sel", { app: "y" }) });
    await env.core.patchNamespacedConfigMap({
      namespace: ns,
      name: "sel",
      body: [{ op: "replace", path: "/metadata/labels/app", value: "x" }],
    });
    await env.core.patchNamespacedConfigMap({
      namespace: ns,
      name: "sel",
      body: [{ op: "replace", path: "/metadata/labels/app", value: "z" }],
    });
    await eventually(
      () => watch.events.length,
      (n) => n >= 2,
    );
    watch.stop();
    expect(watch.events.map((e) => e.type)).toEqual(["ADDED", "DELETED"]);
  });

  it("watches custom resources across namespaces", async () => {
    const start = (await env.custom.listClusterCustomObject(agd)).metadata.resourceVersion;
    const watch = await record("/apis/agentplane.dev/v1alpha1/agentdeployments", { resourceVersion: start });
    await env.custom.createNamespacedCustomObject({ ...agd, namespace: ns, body: agentDeployment("watched") });
    await eventually(
      () => watch.events.length,
      (n) => n >= 1,
    );
    watch.stop();
    expect(watch.events[0]).toMatchObject({ type: "ADDED", name: "watched", object: { kind: "AgentDeployment" } });
  });
});

describe("informer (makeInformer)", () => {
  it("lists, fills its cache and follows changes", async () => {
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const informer = makeInformer<V1ConfigMap>(
      env.kc,
      path,
      () => env.core.listNamespacedConfigMap({ namespace: ns, labelSelector: "informed=yes" }),
      "informed=yes",
    );
    const seen: string[] = [];
    informer.on("add", (o) => seen.push(`add ${o.metadata?.name}`));
    informer.on("update", (o) => seen.push(`update ${o.metadata?.name}`));
    informer.on("delete", (o) => seen.push(`delete ${o.metadata?.name}`));
    await env.core.createNamespacedConfigMap({ namespace: ns, body: cm("inf-1", { informed: "yes" }) });
    await informer.start();
    expect(informer.get("inf-1", ns)).toBeDefined();
    await env.core.createNamespacedConfigMap({ namespace: ns, body: cm("inf-2", { informed: "yes" }) });
    await env.core.patchNamespacedConfigMap({
      namespace: ns,
      name: "inf-2",
      body: [{ op: "add", path: "/data", value: { a: "1" } }],
    });
    await env.core.deleteNamespacedConfigMap({ namespace: ns, name: "inf-1" });
    await eventually(
      () => seen.length,
      (n) => n >= 4,
    );
    await informer.stop();
    expect(seen).toEqual(["add inf-1", "add inf-2", "update inf-2", "delete inf-1"]);
    expect(informer.list(ns).map((o) => o.metadata?.name)).toEqual(["inf-2"]);
  });
});
