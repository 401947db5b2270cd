import { CLEANUP_FINALIZER } from "@agentplane/crds";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agd, agentDeployment, eventually, failure, startWithClients } from "./clients.ts";

let env: Awaited<ReturnType<typeof startWithClients>>;
const ns = "lifecycle";
const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

beforeAll(async () => {
  env = await startWithClients();
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
});
afterAll(() => env.kube.close());

async function createOwner(name: string, finalizers: string[] = []) {
  const body = agentDeployment(name);
  return (await env.custom.createNamespacedCustomObject({
    ...agd,
    namespace: ns,
    body: { ...body, metadata: { ...body.metadata, finalizers } },
  })) as any;
}

function ownedBy(owner: any, blockOwnerDeletion = false) {
  return [
    {
      apiVersion: owner.apiVersion,
      kind: owner.kind,
      name: owner.metadata.name,
      uid: owner.metadata.uid,
      controller: true,
      blockOwnerDeletion,
    },
  ];
}

const exists = (plural: "configmaps" | "secrets", name: string) => env.kube.get("v1", plural, ns, name) !== undefined;
const agdExists = (name: string) => env.kube.get("agentplane.dev/v1alpha1", "agentdeployments", ns, name) !== undefined;

describe("finalizers", () => {
  it("DELETE sets deletionTimestamp and the object goes when the last finalizer is removed", async () => {
    await createOwner("fin", [CLEANUP_FINALIZER]);
    const deleting: any = await env.custom.deleteNamespacedCustomObject({ ...agd, namespace: ns, name: "fin" });
    expect(deleting.metadata.deletionTimestamp).toBeTruthy();
    const current: any = await env.custom.getNamespacedCustomObject({ ...agd, namespace: ns, name: "fin" });
    expect(current.metadata.finalizers).toEqual([CLEANUP_FINALIZER]);
    const added = await failure(
      env.custom.patchNamespacedCustomObject(
        { ...agd, namespace: ns, name: "fin", body: { metadata: { finalizers: [CLEANUP_FINALIZER, "x/y"] } } },
        merge,
      ),
    );
    expect(added.code).toBe(422);
    await env.custom.patchNamespacedCustomObject(
      { ...agd, namespace: ns, name: "fin", body: { metadata: { finalizers: null } } },
      merge,
    );
    expect(agdExists("fin")).toBe(false);
  });

  it("checks delete preconditions", async () => {
    await env.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "pre" } } });
    const error = await failure(
      env.core.deleteNamespacedConfigMap({ namespace: ns, name: "pre", body: { preconditions: { uid: "other" } } }),
    );
    expect(error).toMatchObject({ code: 409, reason: "Conflict" });
    expect(exists("configmaps", "pre")).toBe(true);
  });
});

describe("garbage collection by ownerReferences", () => {
  it("background: deleting an owner deletes its dependents, cascading", async () => {
    const owner = await createOwner("bg");
    const child = await env.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "bg-child", ownerReferences: ownedBy(owner) } },
    });
    const ownedByChild = [{ apiVersion: "v1", kind: "ConfigMap", name: "bg-child", uid: child.metadata!.uid! }];
    await env.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: "bg-grandchild", ownerReferences: ownedByChild } },
    });
    await env.custom.deleteNamespacedCustomObject({ ...agd, namespace: ns, name: "bg" });
    expect(agdExists("bg")).toBe(false);
    await eventually(
      () => exists("configmaps", "bg-child") || exists("secrets", "bg-grandchild"),
      (left) => !left,
    );
  });

  it("keeps a dependent that has another owner, dropping the dangling reference", async () => {
    const first = await createOwner("own-1");
    const second = await createOwner("own-2");
    await env.core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: "shared",
          ownerReferences: [...ownedBy(first), { ...ownedBy(second)[0]!, controller: false }],
        },
      },
    });
    await env.custom.deleteNamespacedCustomObject({ ...agd, namespace: ns, name: "own-1" });
    const shared = await eventually(
      () => env.kube.get("v1", "configmaps", ns, "shared"),
      (o) => o?.metadata.ownerReferences?.length === 1,
    );
    expect(shared?.metadata.ownerReferences?.[0]?.name).toBe("own-2");
  });

  it("foreground: the owner waits (with deletionTimestamp) until blocking dependents are gone", async () => {
    const owner = await createOwner("fg");
    await env.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "fg-child", finalizers: ["test/hold"], ownerReferences: ownedBy(owner, true) } },
    });
    await env.custom.deleteNamespacedCustomObject({
      ...agd,
      namespace: ns,
      name: "fg",
      propagationPolicy: "Foreground",
    });
    const waiting = await eventually(
      () => env.kube.get("v1", "configmaps", ns, "fg-child"),
      (o) => o?.metadata.deletionTimestamp !== undefined,
    );
    expect(waiting).toBeDefined();
    expect(env.kube.get("agentplane.dev/v1alpha1", "agentdeployments", ns, "fg")?.metadata.finalizers).toEqual([
      "foregroundDeletion",
    ]);
    await env.core.patchNamespacedConfigMap(
      { namespace: ns, name: "fg-child", body: { metadata: { finalizers: null } } },
      merge,
    );
    await eventually(
      () => agdExists("fg"),
      (left) => !left,
    );
  });

  it("orphan: dependents stay and lose the owner reference", async () => {
    const owner = await createOwner("orphan");
    await env.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "orphan-child", ownerReferences: ownedBy(owner) } },
    });
    await env.custom.deleteNamespacedCustomObject({
      ...agd,
      namespace: ns,
      name: "orphan",
      propagationPolicy: "Orphan",
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(env.kube.get("v1", "configmaps", ns, "orphan-child")?.metadata.ownerReferences ?? []).toEqual([]);
  });

  it("deletes a dependent whose owner does not exist", async () => {
    const ghost = {
      apiVersion: "agentplane.dev/v1alpha1",
      kind: "AgentDeployment",
      name: "ghost",
      uid: "00000000-0000-0000-0000-000000000000",
    };
    await env.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "dangling", ownerReferences: [ghost] } },
    });
    await eventually(
      () => exists("configmaps", "dangling"),
      (left) => !left,
    );
  });
});

describe("namespaces", () => {
  it("terminate: contents are deleted, then the namespace; new objects are refused meanwhile", async () => {
    await env.core.createNamespace({ body: { metadata: { name: "doomed" } } });
    await env.core.createNamespacedConfigMap({
      namespace: "doomed",
      body: { metadata: { name: "held", finalizers: ["test/hold"] } },
    });
    await env.core.deleteNamespace({ name: "doomed" });
    const terminating = await env.core.readNamespace({ name: "doomed" });
    expect(terminating.status?.phase).toBe("Terminating");
    const refused = await failure(
      env.core.createNamespacedConfigMap({ namespace: "doomed", body: { metadata: { name: "late" } } }),
    );
    expect(refused.code).toBe(403);
    await eventually(() => env.kube.get("v1", "configmaps", "doomed", "held")?.metadata.deletionTimestamp, Boolean);
    await env.core.patchNamespacedConfigMap(
      { namespace: "doomed", name: "held", body: { metadata: { finalizers: null } } },
      merge,
    );
    await eventually(
      () => env.kube.get("v1", "namespaces", undefined, "doomed"),
      (left) => left === undefined,
    );
  });
});
