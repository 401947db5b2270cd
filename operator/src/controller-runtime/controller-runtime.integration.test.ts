import { loadCrdManifests } from "@agentplane/crds";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { type KubeApiServer, startKubeApiServer } from "../../../testing/kube-apiserver/server.ts";
import { eventually } from "../../../testing/kubelet/cluster.ts";
import { KubeClient, type KubeObject } from "../kube/client.ts";
import { connectionFromKubeconfig } from "../kube/config.ts";
import { type Informer, startInformer } from "./informer.ts";
import { LeaderElector } from "./leader.ts";

const log = pino({ level: "silent" });
let server: KubeApiServer | undefined;
let informer: Informer<KubeObject> | undefined;

afterEach(async () => {
  await informer?.stop();
  await server?.close();
});

const configMap = (name: string, value: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default" },
  data: { value },
});

describe("informer (list + watch into a cache)", () => {
  it("follows adds, updates and deletes, and relists after 410 Gone", async () => {
    const requests: string[] = [];
    server = await startKubeApiServer({ log: (line) => requests.push(line) });
    const kube = new KubeClient(connectionFromKubeconfig(server.kubeconfigPath));
    const path = "/api/v1/namespaces/default/configmaps";
    await kube.create(path, configMap("before", "1"));
    const events: string[] = [];
    informer = startInformer<KubeObject>({
      kube,
      path,
      log,
      backoff: { baseMs: 20, maxMs: 200 },
      watchTimeoutSeconds: 1,
      onEvent: (obj, deleted) => events.push(`${deleted ? "-" : "+"}${obj.metadata?.name}`),
    });
    await informer.synced;
    expect(informer.cache.get("before", "default")).toBeDefined();

    await kube.create(path, configMap("during", "1"));
    await kube.mergePatch(`${path}/during`, { data: { value: "2" } }, "test");
    await eventually(
      () => (informer?.cache.get("during", "default") as { data?: { value?: string } })?.data?.value === "2",
    );

    await kube.delete(`${path}/before`);
    await eventually(() => events.includes("-before"));

    // A change the informer does not watch moves the global resourceVersion past the informer's;
    // then the history is forgotten, so resuming the watch (every second here) gets 410 Gone.
    const lists = () => requests.filter((line) => line.startsWith(`GET ${path}`) && !line.includes("watch=")).length;
    expect(lists()).toBe(1);
    await kube.create("/api/v1/namespaces/kube-system/configmaps", {
      ...configMap("elsewhere", "1"),
      metadata: { name: "elsewhere", namespace: "kube-system" },
    });
    server.api.store.compact();
    await eventually(() => lists() >= 2, 10_000, "a relist after 410 Gone");
    await kube.create(path, configMap("after", "1"));
    await eventually(() => informer?.cache.get("after", "default") !== undefined);
    const names = informer.cache.list("default").map((o) => o.metadata?.name);
    expect(names.sort()).toEqual(["after", "during"]);
  });

  it("keeps retrying with backoff until the resource exists (operator started before its CRDs)", async () => {
    const requests: string[] = [];
    server = await startKubeApiServer({ log: (line) => requests.push(line) });
    const kube = new KubeClient(connectionFromKubeconfig(server.kubeconfigPath));
    const path = "/apis/agentplane.dev/v1alpha1/agentdeployments";
    let synced = false;
    informer = startInformer<KubeObject>({ kube, path, log, backoff: { baseMs: 20, maxMs: 200 }, onEvent: () => {} });
    void informer.synced.then(() => {
      synced = true;
    });
    const notFound = () => requests.filter((line) => line.startsWith(`GET ${path}`) && line.endsWith(" 404")).length;
    await eventually(() => notFound() >= 3, 5_000, "three lists answered 404");
    expect(synced).toBe(false);
    for (const crd of loadCrdManifests())
      await kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
    await eventually(() => synced, 10_000, "the informer to sync once the CRD exists");
  });
});

describe("leader election on a coordination.k8s.io Lease", () => {
  const electors: LeaderElector[] = [];
  afterEach(async () => {
    for (const elector of electors.splice(0)) await elector.stop();
  });

  const campaign = (kube: KubeClient, leading: Set<string>, identity: string, retryPeriodMs = 100) => {
    const elector = new LeaderElector({
      kube,
      namespace: "default",
      leaseName: "op",
      identity,
      leaseDurationMs: 60_000,
      renewDeadlineMs: 40_000,
      retryPeriodMs,
      log,
      onStartedLeading: () => leading.add(identity),
      onStoppedLeading: () => leading.delete(identity),
    });
    electors.push(elector);
    elector.start();
    return elector;
  };

  it("elects one leader, writes six-digit MicroTimes, and hands over at once when the leader releases", async () => {
    server = await startKubeApiServer();
    const kube = new KubeClient(connectionFromKubeconfig(server.kubeconfigPath));
    const leading = new Set<string>();
    const elector = (identity: string) => campaign(kube, leading, identity);
    const a = elector("a");
    await eventually(() => leading.has("a"));
    const b = elector("b");
    // Proves a negative: over five of b's 100 ms retry periods, b never takes the lease a holds.
    await new Promise((r) => setTimeout(r, 500));
    expect([...leading]).toEqual(["a"]);
    expect(b.isLeader).toBe(false);
    const lease = server.get("coordination.k8s.io/v1", "leases", "default", "op") as unknown as {
      spec: Record<string, unknown>;
    };
    expect(lease.spec.holderIdentity).toBe("a");
    expect(lease.spec.renewTime).toMatch(/\.\d{6}Z$/);

    // The lease lasts a minute, so only the release lets b take over within the test.
    await a.stop();
    await eventually(() => leading.has("b"), 5_000, "b to lead after a released the lease");
    expect(leading.has("a")).toBe(false);
    const taken = server.get("coordination.k8s.io/v1", "leases", "default", "op") as unknown as {
      spec: Record<string, unknown>;
    };
    expect(taken.spec).toMatchObject({ holderIdentity: "b", leaseTransitions: 1 });
  });

  it("releases the lease when stop lands in the middle of a renewal", async () => {
    server = await startKubeApiServer();
    const kube = new KubeClient(connectionFromKubeconfig(server.kubeconfigPath));
    const leading = new Set<string>();
    // A zero retry period keeps a renewal in flight nearly always, so each stop meets one.
    for (let attempt = 0; attempt < 20; attempt++) {
      const identity = `leader-${attempt}`;
      const elector = campaign(kube, leading, identity, 0);
      await eventually(() => leading.has(identity), 5_000, `${identity} to lead`);
      // Not a wait for anything: 0-4 ms of jitter so the stops land at different points of a renewal.
      await new Promise((r) => setTimeout(r, attempt % 5));
      await elector.stop();
      expect(leading.size).toBe(0);
      const lease = server.get("coordination.k8s.io/v1", "leases", "default", "op") as unknown as {
        spec: Record<string, unknown>;
      };
      expect(lease.spec.holderIdentity, `attempt ${attempt}`).toBe("");
    }
  });
});
