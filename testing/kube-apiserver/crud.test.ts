import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failure, startWithClients } from "./clients.ts";

let env: Awaited<ReturnType<typeof startWithClients>>;
const ns = "crud";

beforeAll(async () => {
  env = await startWithClients();
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
});
afterAll(() => env.kube.close());

describe("discovery", () => {
  it("lets KubernetesObjectApi resolve built-in and custom kinds", async () => {
    const created = await env.objects.create<any>({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "leader", namespace: ns },
      spec: { holderIdentity: "a", leaseDurationSeconds: 15 },
    });
    expect(created.metadata?.uid).toBeTruthy();
    const read = await env.objects
      .read({
        apiVersion: "agentplane.dev/v1alpha1",
        kind: "AgentDeployment",
        metadata: { name: "missing", namespace: ns },
      })
      .catch((e) => e.code);
    expect(read).toBe(404);
  });

  it("advertises the CRDs with verbs, short names, categories and the status subresource", async () => {
    const list = (await fetch(`${env.kube.url}/apis/agentplane.dev/v1alpha1`).then((r) => r.json())) as any;
    const byName = Object.fromEntries(list.resources.map((r: any) => [r.name, r]));
    expect(byName.agentdeployments).toMatchObject({ kind: "AgentDeployment", namespaced: true, shortNames: ["agd"] });
    expect(byName.agentdeployments.categories).toContain("agentplane");
    expect(byName.agentdeployments.verbs).toEqual(expect.arrayContaining(["create", "get", "list", "watch", "patch"]));
    expect(byName["agentdeployments/status"].verbs).toEqual(["get", "patch", "update"]);
    const groups = (await fetch(`${env.kube.url}/apis`).then((r) => r.json())) as any;
    expect(groups.groups.map((g: any) => g.name)).toEqual(expect.arrayContaining(["apps", "agentplane.dev", "policy"]));
  });
});

describe("CRUD", () => {
  it("creates, reads, lists and replaces with optimistic concurrency", async () => {
    const created = await env.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: "s1" }, stringData: { a: "b" } },
    });
    const stale = created.metadata!.resourceVersion;
    const updated = await env.core.replaceNamespacedSecret({
      namespace: ns,
      name: "s1",
      body: { ...created, data: { a: Buffer.from("c").toString("base64") } },
    });
    expect(Number(updated.metadata!.resourceVersion)).toBeGreaterThan(Number(stale));
    const conflict = await failure(
      env.core.replaceNamespacedSecret({
        namespace: ns,
        name: "s1",
        body: { ...created, metadata: { ...created.metadata, resourceVersion: stale } },
      }),
    );
    expect(conflict).toMatchObject({ kind: "Status", status: "Failure", reason: "Conflict", code: 409 });
    const exists = await failure(
      env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: "s1" } } }),
    );
    expect(exists).toMatchObject({ reason: "AlreadyExists", code: 409 });
    const missing = await failure(env.core.readNamespacedSecret({ namespace: ns, name: "nope" }));
    expect(missing).toMatchObject({ reason: "NotFound", code: 404, message: 'secrets "nope" not found' });
    const list = await env.core.listNamespacedSecret({ namespace: ns });
    expect(list.items.map((s) => s.metadata?.name)).toContain("s1");
  });

  it("refuses objects in a namespace that does not exist", async () => {
    const error = await failure(
      env.core.createNamespacedConfigMap({ namespace: "ghost", body: { metadata: { name: "c" } } }),
    );
    expect(error).toMatchObject({ reason: "NotFound", code: 404, message: 'namespaces "ghost" not found' });
  });

  it("rejects invalid names with 422", async () => {
    const error = await failure(
      env.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "Not_Valid" } } }),
    );
    expect(error).toMatchObject({ reason: "Invalid", code: 422 });
    expect(error.details.causes[0].field).toBe("metadata.name");
  });

  it("selects by label and field", async () => {
    for (const [name, tier] of [
      ["web-1", "web"],
      ["web-2", "web"],
      ["db-1", "db"],
    ]) {
      await env.core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name, labels: { tier: tier! } } },
      });
    }
    const names = async (labelSelector?: string, fieldSelector?: string) =>
      (await env.core.listNamespacedConfigMap({ namespace: ns, labelSelector, fieldSelector })).items
        .map((c) => c.metadata!.name)
        .sort();
    expect(await names("tier=web")).toEqual(["web-1", "web-2"]);
    expect(await names("tier in (db,cache)")).toEqual(["db-1"]);
    expect(await names("tier!=web,tier")).toEqual(["db-1"]);
    expect(await names(undefined, "metadata.name=web-2")).toEqual(["web-2"]);
    expect(await names("tier=web", "metadata.name!=web-2")).toEqual(["web-1"]);
    const all = await env.core.listConfigMapForAllNamespaces({
      fieldSelector: `metadata.namespace=${ns}`,
      labelSelector: "tier",
    });
    expect(all.items).toHaveLength(3);
  });
});

describe("more of the API surface", () => {
  it("dry-run validates without storing", async () => {
    const created = await env.core.createNamespacedConfigMap({
      namespace: ns,
      dryRun: "All",
      body: { metadata: { name: "dry" } },
    });
    expect(created.metadata?.name).toBe("dry");
    expect(env.kube.get("v1", "configmaps", ns, "dry")).toBeUndefined();
  });

  it("deletes a collection by label", async () => {
    for (const name of ["gone-1", "gone-2"]) {
      await env.core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name, labels: { sweep: "yes" } } },
      });
    }
    await env.core.deleteCollectionNamespacedConfigMap({ namespace: ns, labelSelector: "sweep=yes" });
    expect(env.kube.list("v1", "configmaps", ns).filter((c) => c.metadata.labels?.sweep)).toEqual([]);
  });

  it("requires six fractional digits in Lease MicroTime fields, like the real decoder", async () => {
    const lease = (renewTime: string) => ({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: `lease-${renewTime.length}`, namespace: ns },
      spec: { holderIdentity: "a", renewTime },
    });
    const error = await failure(env.objects.create(lease(new Date().toISOString())));
    expect(error).toMatchObject({ code: 400, reason: "BadRequest" });
    const created: any = await env.objects.create(lease("2026-01-01T00:00:00.123456Z"));
    expect(created.spec.renewTime).toBe("2026-01-01T00:00:00.123456Z");
  });

  it("validates built-in kinds against the Kubernetes OpenAPI schema", async () => {
    const deployment = (container: object) => ({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "checked", namespace: ns },
      spec: {
        selector: { matchLabels: { app: "c" } },
        template: { metadata: { labels: { app: "c" } }, spec: { containers: [container] } },
      },
    });
    const wrongType = await failure(
      env.objects.create(deployment({ name: "c", image: "i", ports: [{ containerPort: "80" }] }) as any),
    );
    expect(wrongType).toMatchObject({ code: 400, reason: "BadRequest" });
    expect(wrongType.message).toContain("spec.template.spec.containers[0].ports[0].containerPort");
    const missing = await failure(env.objects.create(deployment({ image: "i" }) as any));
    expect(missing).toMatchObject({ code: 422, reason: "Invalid" });
    expect(missing.details.causes[0].field).toBe("spec.template.spec.containers[0].name");
    const created: any = await env.objects.create(
      deployment({ name: "c", image: "i", ports: [{ containerPort: 80 }] }) as any,
    );
    expect(created.spec.replicas).toBe(1);
  });
});

describe("NetworkPolicies (networking.k8s.io/v1)", () => {
  const policy = (name: string, component: string) => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name, namespace: ns, labels: { "app.kubernetes.io/component": component } },
    spec: {
      podSelector: { matchLabels: { app: name } },
      policyTypes: ["Ingress"],
      ingress: [
        { from: [{ podSelector: { matchLabels: { app: "client" } } }], ports: [{ protocol: "TCP", port: 6379 }] },
      ],
    },
  });

  it("are discovered, stored and listed by label", async () => {
    const resources = (await fetch(`${env.kube.url}/apis/networking.k8s.io/v1`).then((r) => r.json())) as any;
    expect(resources.resources.find((r: any) => r.name === "networkpolicies")).toMatchObject({
      kind: "NetworkPolicy",
      namespaced: true,
      shortNames: ["netpol"],
    });
    await env.objects.create<any>(policy("redis", "redis"));
    await env.objects.create<any>(policy("agent", "agent-server"));
    const stored = env.kube.get("networking.k8s.io/v1", "networkpolicies", ns, "redis") as any;
    expect(stored.spec.ingress[0].ports).toEqual([{ protocol: "TCP", port: 6379 }]);
    const path = `${env.kube.url}/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`;
    const selected = (await fetch(`${path}?labelSelector=app.kubernetes.io%2Fcomponent%3Dredis`).then((r) =>
      r.json(),
    )) as any;
    expect(selected.items.map((p: any) => p.metadata.name)).toEqual(["redis"]);
  });

  it("are checked against the real schema", async () => {
    const bad = policy("bad", "redis") as any;
    bad.spec.podSelector = "everything";
    const response = await fetch(`${env.kube.url}/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(bad),
    });
    expect(response.status).toBe(400);
  });
});
