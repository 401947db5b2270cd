import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agd, agentDeployment, failure, startWithClients } from "./clients.ts";
import { jsonPatch, mergePatch, strategicMergePatch } from "./patch.ts";

let env: Awaited<ReturnType<typeof startWithClients>>;
const ns = "patching";
const as = (strategy: PatchStrategy) => setHeaderOptions("Content-Type", strategy);

beforeAll(async () => {
  env = await startWithClients();
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
});
afterAll(() => env.kube.close());

function deployment(name: string, containers: { name: string; image: string }[]) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers } },
    },
  };
}

describe("patch types", () => {
  it("merge patch: objects merge, null removes", async () => {
    await env.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "m" }, data: { a: "1", b: "2" } },
    });
    const patched = await env.core.patchNamespacedConfigMap(
      { namespace: ns, name: "m", body: { data: { b: null, c: "3" } } },
      as(PatchStrategy.MergePatch),
    );
    expect(patched.data).toEqual({ a: "1", c: "3" });
  });

  it("JSON patch: operations apply in order and a failed test is 422 with nothing written", async () => {
    const before = await env.core.readNamespacedConfigMap({ namespace: ns, name: "m" });
    const error = await failure(
      env.core.patchNamespacedConfigMap({
        namespace: ns,
        name: "m",
        body: [
          { op: "replace", path: "/data/a", value: "changed" },
          { op: "test", path: "/data/a", value: "something else" },
        ],
      }),
    );
    expect(error.code).toBe(422);
    const after = await env.core.readNamespacedConfigMap({ namespace: ns, name: "m" });
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    const moved = await env.core.patchNamespacedConfigMap({
      namespace: ns,
      name: "m",
      body: [
        { op: "test", path: "/metadata/resourceVersion", value: before.metadata?.resourceVersion },
        { op: "move", from: "/data/a", path: "/data/z" },
      ],
    });
    expect(moved.data).toEqual({ c: "3", z: "1" });
  });

  it("strategic merge patch merges containers by name on built-ins", async () => {
    await env.apps.createNamespacedDeployment({
      namespace: ns,
      body: deployment("smp", [
        { name: "app", image: "app:1" },
        { name: "proxy", image: "proxy:1" },
      ]),
    });
    const patched = await env.apps.patchNamespacedDeployment(
      {
        namespace: ns,
        name: "smp",
        body: { spec: { template: { spec: { containers: [{ name: "app", image: "app:2" }] } } } },
      },
      as(PatchStrategy.StrategicMergePatch),
    );
    expect(patched.spec?.template.spec?.containers.map((c) => `${c.name}=${c.image}`)).toEqual([
      "app=app:2",
      "proxy=proxy:1",
    ]);
    expect(patched.metadata?.generation).toBe(2);
    expect(patched.spec?.replicas).toBe(1);
  });

  it("strategic merge patch on a custom resource is 415", async () => {
    await env.custom.createNamespacedCustomObject({ ...agd, namespace: ns, body: agentDeployment("cr") });
    const error = await failure(
      env.custom.patchNamespacedCustomObject(
        { ...agd, namespace: ns, name: "cr", body: { spec: { revisionName: "r2" } } },
        as(PatchStrategy.StrategicMergePatch),
      ),
    );
    expect(error).toMatchObject({ code: 415, reason: "UnsupportedMediaType" });
  });

  it("a merge patch carrying a stale resourceVersion is a 409", async () => {
    const error = await failure(
      env.custom.patchNamespacedCustomObject(
        {
          ...agd,
          namespace: ns,
          name: "cr",
          body: { metadata: { resourceVersion: "1" }, spec: { revisionName: "r3" } },
        },
        as(PatchStrategy.MergePatch),
      ),
    );
    expect(error).toMatchObject({ code: 409, reason: "Conflict" });
  });
});

describe("server-side apply", () => {
  const apply = (object: object, manager: string, force = false) =>
    env.objects.patch<any>(object as any, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);

  it("creates when absent, records managedFields and is a no-op when re-applied", async () => {
    const created = await apply(deployment("ssa", [{ name: "app", image: "app:1" }]), "operator");
    expect(created.metadata?.managedFields?.map((m: any) => `${m.manager}/${m.operation}`)).toEqual(["operator/Apply"]);
    expect(JSON.stringify(created.metadata?.managedFields?.[0]?.fieldsV1)).toContain('"k:{\\"name\\":\\"app\\"}"');
    const again = await apply(deployment("ssa", [{ name: "app", image: "app:1" }]), "operator");
    expect(again.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
  });

  it("reports conflicts with another manager as 409 unless forced", async () => {
    const error = await failure(apply(deployment("ssa", [{ name: "app", image: "app:2" }]), "someone-else"));
    expect(error).toMatchObject({ code: 409, reason: "Conflict" });
    expect(error.message).toContain('conflict with "operator"');
    expect(error.details.causes[0].field).toBe('.spec.template.spec.containers[name="app"].image');
    const forced = await apply(deployment("ssa", [{ name: "app", image: "app:2" }]), "someone-else", true);
    expect(forced.spec.template.spec.containers[0].image).toBe("app:2");
  });

  it("removes fields the manager stops applying, keeps fields others own", async () => {
    await apply(
      deployment("owned", [
        { name: "app", image: "app:1" },
        { name: "sidecar", image: "side:1" },
      ]),
      "operator",
    );
    await env.apps.patchNamespacedDeployment(
      { namespace: ns, name: "owned", body: { metadata: { labels: { team: "a" } } }, fieldManager: "human" },
      as(PatchStrategy.MergePatch),
    );
    const reapplied = await apply(deployment("owned", [{ name: "app", image: "app:1" }]), "operator");
    expect(reapplied.spec.template.spec.containers.map((c: any) => c.name)).toEqual(["app"]);
    expect(reapplied.metadata?.labels).toEqual({ team: "a" });
  });

  it("applies status through the status subresource of a custom resource", async () => {
    const status = {
      apiVersion: "agentplane.dev/v1alpha1",
      kind: "AgentDeployment",
      metadata: { name: "cr", namespace: ns },
      status: { deploymentStatus: "READY", readyReplicas: 1 },
    };
    const result: any = await env.custom.patchNamespacedCustomObjectStatus(
      { ...agd, namespace: ns, name: "cr", body: status, fieldManager: "operator", force: true },
      as(PatchStrategy.ServerSideApply),
    );
    expect(result.status).toEqual({ deploymentStatus: "READY", readyReplicas: 1 });
    expect(result.metadata.generation).toBe(1);
    const error = await failure(apply({ ...status, status: undefined, spec: { revisionName: 5 } }, "operator", true));
    expect(error.code).toBe(422);
  });
});

describe("patch functions", () => {
  it("JSON patch handles escaping, append and copy", () => {
    const result = jsonPatch({ metadata: { labels: { "a/b": "1" } }, list: [1] }, [
      { op: "add", path: "/list/-", value: 2 },
      { op: "copy", from: "/metadata/labels/a~1b", path: "/copied" },
      { op: "remove", path: "/list/0" },
    ]);
    expect(result).toEqual({ metadata: { labels: { "a/b": "1" } }, list: [2], copied: "1" });
  });

  it("strategic merge understands $patch: delete, $deleteFromPrimitiveList and $setElementOrder", () => {
    const current = { spec: { containers: [{ name: "a" }, { name: "b" }], finalizers: ["x", "y"] } };
    const result = strategicMergePatch(current, {
      spec: {
        "$setElementOrder/containers": [{ name: "b" }],
        containers: [{ name: "a", $patch: "delete" }],
        "$deleteFromPrimitiveList/finalizers": ["x"],
      },
    });
    expect(result).toEqual({ spec: { containers: [{ name: "b" }], finalizers: ["y"] } });
  });

  it("merge patch replaces lists wholesale", () => {
    expect(mergePatch({ a: [1, 2], b: { c: 1 } }, { a: [3], b: { d: 2 } })).toEqual({ a: [3], b: { c: 1, d: 2 } });
  });
});

describe("apply request checks", () => {
  it("requires an explicit fieldManager", async () => {
    const response = await fetch(`${env.kube.url}/api/v1/namespaces/${ns}/configmaps/nameless`, {
      method: "PATCH",
      headers: { "content-type": "application/apply-patch+yaml", "user-agent": "someone/1.0" },
      body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nameless\n",
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      reason: "BadRequest",
      message: "fieldManager is required for apply requests",
    });
  });
});
