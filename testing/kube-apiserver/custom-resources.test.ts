import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agd, agentDeployment, agr, failure, startWithClients } from "./clients.ts";

let env: Awaited<ReturnType<typeof startWithClients>>;
const ns = "custom";

beforeAll(async () => {
  env = await startWithClients();
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
});
afterAll(() => env.kube.close());

describe("custom resources", () => {
  it("validate against the CRD schema with a Status body like the real apiserver", async () => {
    const bad = agentDeployment("bad");
    (bad.spec as any).source = "github";
    (bad.spec.template as any).resources = { minScale: -1 };
    const error = await failure(env.custom.createNamespacedCustomObject({ ...agd, namespace: ns, body: bad }));
    expect(error).toMatchObject({ kind: "Status", reason: "Invalid", code: 422 });
    expect(error.details.causes.map((c: any) => c.field).sort()).toEqual([
      "spec.source",
      "spec.template.resources.minScale",
    ]);
    expect(error.message).toContain('AgentDeployment.agentplane.dev "bad" is invalid');
  });

  it("prune undeclared fields", async () => {
    const body = agentDeployment("pruned");
    (body.spec as any).surprise = true;
    const created: any = await env.custom.createNamespacedCustomObject({ ...agd, namespace: ns, body });
    expect(created.spec.surprise).toBeUndefined();
  });

  it("bump generation on spec changes only, and keep status to the status subresource", async () => {
    const created: any = await env.custom.createNamespacedCustomObject({
      ...agd,
      namespace: ns,
      body: { ...agentDeployment("gen"), status: { deploymentStatus: "READY" } },
    });
    expect(created.metadata.generation).toBe(1);
    expect(created.status).toBeUndefined();
    const labelled: any = await env.custom.replaceNamespacedCustomObject({
      ...agd,
      namespace: ns,
      name: "gen",
      body: {
        ...created,
        metadata: { ...created.metadata, labels: { a: "b" } },
        status: { deploymentStatus: "READY" },
      },
    });
    expect(labelled.metadata.generation).toBe(1);
    expect(labelled.status).toBeUndefined();
    const withStatus: any = await env.custom.replaceNamespacedCustomObjectStatus({
      ...agd,
      namespace: ns,
      name: "gen",
      body: {
        ...labelled,
        spec: { ...labelled.spec, displayName: "ignored" },
        status: { deploymentStatus: "READY", observedGeneration: 1 },
      },
    });
    expect(withStatus.status).toEqual({ deploymentStatus: "READY", observedGeneration: 1 });
    expect(withStatus.spec.displayName).toBe("agent-gen");
    expect(withStatus.metadata.generation).toBe(1);
    const respecced: any = await env.custom.replaceNamespacedCustomObject({
      ...agd,
      namespace: ns,
      name: "gen",
      body: { ...withStatus, spec: { ...withStatus.spec, revisionName: "r2" } },
    });
    expect(respecced.metadata.generation).toBe(2);
    expect(respecced.status.deploymentStatus).toBe("READY");
  });

  it("do not bump resourceVersion for a write that changes nothing", async () => {
    const current: any = await env.custom.getNamespacedCustomObject({ ...agd, namespace: ns, name: "gen" });
    const again: any = await env.custom.replaceNamespacedCustomObject({
      ...agd,
      namespace: ns,
      name: "gen",
      body: current,
    });
    expect(again.metadata.resourceVersion).toBe(current.metadata.resourceVersion);
  });

  it("refuse an update without resourceVersion (no unconditional updates for custom resources)", async () => {
    const current: any = await env.custom.getNamespacedCustomObject({ ...agd, namespace: ns, name: "gen" });
    const { resourceVersion: _rv, ...metadata } = current.metadata;
    const error = await failure(
      env.custom.replaceNamespacedCustomObject({ ...agd, namespace: ns, name: "gen", body: { ...current, metadata } }),
    );
    expect(error).toMatchObject({ code: 422, reason: "Invalid" });
    expect(error.details.causes[0].field).toBe("metadata.resourceVersion");
  });

  it("enforce the immutable AgentRevision spec", async () => {
    const body = {
      apiVersion: "agentplane.dev/v1alpha1",
      kind: "AgentRevision",
      metadata: { name: "rev-1" },
      spec: {
        deploymentId: "gen",
        source: "external_docker",
        sourceRevisionConfig: { image_uri: "a:1" },
        template: { image: "a:1" },
      },
    };
    const created: any = await env.custom.createNamespacedCustomObject({ ...agr, namespace: ns, body });
    const error = await failure(
      env.custom.replaceNamespacedCustomObject({
        ...agr,
        namespace: ns,
        name: "rev-1",
        body: { ...created, spec: { ...created.spec, template: { image: "b:2" } } },
      }),
    );
    expect(error).toMatchObject({ code: 422, reason: "Invalid" });
    expect(error.message).toContain("spec is immutable");
    const status: any = await env.custom.patchNamespacedCustomObjectStatus({
      ...agr,
      namespace: ns,
      name: "rev-1",
      body: [{ op: "add", path: "/status", value: { revisionStatus: "DEPLOYED" } }],
    });
    expect(status.status.revisionStatus).toBe("DEPLOYED");
  });

  it("serves CRDs created through the API", async () => {
    const crd = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "widgets.example.com" },
      spec: {
        group: "example.com",
        scope: "Namespaced",
        names: { kind: "Widget", listKind: "WidgetList", plural: "widgets", singular: "widget" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: "object",
                properties: { spec: { type: "object", properties: { size: { type: "integer" } } } },
              },
            },
          },
        ],
      },
    };
    await env.objects.create(crd);
    const widget = {
      apiVersion: "example.com/v1",
      kind: "Widget",
      metadata: { name: "w", namespace: ns },
      spec: { size: 3 },
    };
    const created: any = await env.objects.create(widget);
    expect(created.spec.size).toBe(3);
    const error = await failure(
      env.objects.create({ ...widget, metadata: { name: "w2", namespace: ns }, spec: { size: "big" } } as any),
    );
    expect(error.code).toBe(422);
  });
});
