import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Attributes } from "./authorization.ts";
import { startWithClients } from "./clients.ts";

/**
 * The Kubernetes-side rules a real API server applies to objects that pass their OpenAPI schema:
 * each case is refused by the test server with the apiserver's status and wording.
 */

let env: Awaited<ReturnType<typeof startWithClients>>;
const ns = "rules";
const restricted = "restricted-ns";
/** Who may do what when authorization is emulated: the admin (kubeconfig token) everything. */
const grants: Attributes[] = [];
const checked: Attributes[] = [];
const ADMIN = "agentplane-test";
const USER = "system:serviceaccount:rules:writer";

beforeAll(async () => {
  env = await startWithClients({
    authorize: (attributes) => {
      checked.push(attributes);
      if (attributes.user === ADMIN) return true;
      return grants.some((g) =>
        (Object.keys(g) as (keyof Attributes)[]).every((key) => g[key] === "*" || g[key] === attributes[key]),
      );
    },
  });
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
  await env.core.createNamespace({
    body: { metadata: { name: restricted, labels: { "pod-security.kubernetes.io/enforce": "restricted" } } },
  });
});
afterAll(() => env.kube.close());

async function send(
  method: string,
  path: string,
  body?: unknown,
  { token = ADMIN, contentType = "application/json" } = {},
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${env.kube.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": contentType },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

const labels = { app: "web" };
function deployment(name: string, container: Record<string, unknown> = {}, pod: Record<string, unknown> = {}) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: "web", image: "nginx", ...container }], ...pod },
      },
    },
  };
}
const deployments = `/apis/apps/v1/namespaces/${ns}/deployments`;

describe("validation of pod templates (what the OpenAPI schema does not say)", () => {
  it.each([
    [
      "a CPU limit below the request",
      { resources: { requests: { cpu: "2" }, limits: { cpu: "500m" } } },
      'spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 500m',
    ],
    [
      "a memory limit below the request",
      { resources: { requests: { memory: "1Gi" }, limits: { memory: "512Mi" } } },
      "must be less than or equal to memory limit of 512Mi",
    ],
    [
      "a port name over 15 characters",
      { ports: [{ name: "a-very-long-port-name", containerPort: 80 }] },
      'spec.template.spec.containers[0].ports[0].name: Invalid value: "a-very-long-port-name": must be no more than 15 characters',
    ],
    [
      "a port name without a letter",
      { ports: [{ name: "8080", containerPort: 80 }] },
      "must contain at least one letter (a-z)",
    ],
    [
      "a mount of an undeclared volume",
      { volumeMounts: [{ name: "nope", mountPath: "/x" }] },
      'spec.template.spec.containers[0].volumeMounts[0].name: Not found: "nope"',
    ],
  ])("refuses %s (422)", async (_what, container, message) => {
    const answer = await send("POST", deployments, deployment("bad", container));
    expect(answer.status).toBe(422);
    expect(answer.body.reason).toBe("Invalid");
    expect(answer.body.message).toContain(message);
  });

  it("refuses a volume with no source, or two", async () => {
    const none = await send("POST", deployments, deployment("bad", {}, { volumes: [{ name: "data" }] }));
    expect(none.status).toBe(422);
    expect(none.body.message).toContain("spec.template.spec.volumes[0]: Required value: must specify a volume type");
    const two = await send(
      "POST",
      deployments,
      deployment("bad", {}, { volumes: [{ name: "data", emptyDir: {}, secret: { secretName: "s" } }] }),
    );
    expect(two.body.message).toContain("may not specify more than 1 volume type");
  });

  it("refuses a selector that does not select the template's labels, and an invalid label value", async () => {
    const mismatch = deployment("bad");
    mismatch.spec.selector = { matchLabels: { app: "other" } };
    const answer = await send("POST", deployments, mismatch);
    expect(answer.status).toBe(422);
    expect(answer.body.message).toContain("`selector` does not match template `labels`");
    const badLabel = { ...deployment("bad"), metadata: { name: "bad", labels: { tier: "not valid!" } } };
    expect((await send("POST", deployments, badLabel)).body.message).toContain("a valid label must be");
  });

  it("accepts a valid template, then refuses a change of its selector", async () => {
    expect((await send("POST", deployments, deployment("web"))).status).toBe(201);
    const changed = await send(
      "PATCH",
      `${deployments}/web`,
      { spec: { selector: { matchLabels: { app: "x" } } } },
      {
        contentType: "application/merge-patch+json",
      },
    );
    expect(changed.status).toBe(422);
    expect(changed.body.message).toContain("spec.selector");
  });

  it("resets replicas to 1 when the field manager that set them drops them under server-side apply", async () => {
    const apply = (replicas?: number) => {
      const body = deployment("scaled");
      return send(
        "PATCH",
        `${deployments}/scaled?fieldManager=op&force=true`,
        { ...body, spec: { ...body.spec, ...(replicas === undefined ? {} : { replicas }) } },
        { contentType: "application/apply-patch+yaml" },
      );
    };
    expect((await apply(3)).body.spec.replicas).toBe(3);
    expect((await apply()).body.spec.replicas).toBe(1);
  });
});

describe("StatefulSet updates", () => {
  const statefulSets = `/apis/apps/v1/namespaces/${ns}/statefulsets`;
  const statefulSet = (storage: string) => ({
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "db" },
    spec: {
      serviceName: "db",
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: "db", image: "redis" }] } },
      volumeClaimTemplates: [
        {
          metadata: { name: "data" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage } } },
        },
      ],
    },
  });

  it("refuses a change of volumeClaimTemplates (immutable), allows a change of the template", async () => {
    expect((await send("POST", statefulSets, statefulSet("1Gi"))).status).toBe(201);
    const apply = (body: unknown) =>
      send("PATCH", `${statefulSets}/db?fieldManager=op&force=true`, body, {
        contentType: "application/apply-patch+yaml",
      });
    const resized = await apply(statefulSet("5Gi"));
    expect(resized.status).toBe(422);
    expect(resized.body.message).toContain(
      "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    );
    const retemplated = statefulSet("1Gi");
    retemplated.spec.template.spec.containers[0]!.image = "redis:8";
    expect((await apply(retemplated)).status).toBe(200);
  });
});

describe("events", () => {
  it("refuses a note over 1,024 bytes, even when it has fewer characters", async () => {
    const event = (note: string) => ({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: `e${note.length}` },
      eventTime: "2025-01-01T00:00:00.000000Z",
      reportingController: "test",
      reportingInstance: "test",
      action: "Test",
      reason: "Test",
      type: "Normal",
      note,
    });
    const path = `/apis/events.k8s.io/v1/namespaces/${ns}/events`;
    expect((await send("POST", path, event("é".repeat(512)))).status).toBe(201);
    const tooLong = await send("POST", path, event("é".repeat(600)));
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.message).toContain("can have at most 1024 characters");
  });
});

describe("Pod Security admission by namespace label", () => {
  const pod = (securityContext: Record<string, unknown>) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p" },
    spec: { containers: [{ name: "c", image: "nginx", securityContext }] },
  });
  const compliant = {
    allowPrivilegeEscalation: false,
    runAsNonRoot: true,
    capabilities: { drop: ["ALL"] },
    seccompProfile: { type: "RuntimeDefault" },
  };

  it("refuses a pod violating the namespace's enforced level (403), admits a compliant one", async () => {
    const refused = await send("POST", `/api/v1/namespaces/${restricted}/pods`, pod({}));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/^pods "p" is forbidden: violates PodSecurity "restricted:latest": /);
    expect(refused.body.message).toContain("allowPrivilegeEscalation");
    expect((await send("POST", `/api/v1/namespaces/${restricted}/pods`, pod(compliant))).status).toBe(201);
    expect((await send("POST", `/api/v1/namespaces/${ns}/pods`, pod({}))).status).toBe(201);
  });
});

describe("authorization and OwnerReferencesPermissionEnforcement (when authorization is emulated)", () => {
  const secrets = `/api/v1/namespaces/${ns}/secrets`;
  const owned = (name: string, blockOwnerDeletion: boolean, uid: string) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      ownerReferences: [
        { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid, controller: true, blockOwnerDeletion },
      ],
    },
  });

  it("answers a request the user's rules do not allow with RBAC's 403", async () => {
    const answer = await send("GET", secrets, undefined, { token: USER });
    expect(answer.status).toBe(403);
    expect(answer.body.message).toBe(
      `secrets is forbidden: User "${USER}" cannot list resource "secrets" in API group "" in the namespace "${ns}"`,
    );
  });

  it("needs update on the owner's finalizers to set blockOwnerDeletion, and delete to change owners later", async () => {
    const owner = await send("POST", `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: "owner" } });
    const uid = owner.body.metadata.uid as string;
    grants.push({ user: USER, verb: "create", group: "", resource: "secrets", namespace: ns });
    // A reference that does not block the owner's deletion needs nothing more.
    expect((await send("POST", secrets, owned("free", false, uid), { token: USER })).status).toBe(201);
    const blocked = await send("POST", secrets, owned("blocking", true, uid), { token: USER });
    expect(blocked.status).toBe(403);
    expect(blocked.body.message).toBe(
      'secrets "blocking" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can\'t set finalizers on: , <nil>',
    );
    expect(checked).toContainEqual({
      user: USER,
      verb: "update",
      group: "",
      resource: "configmaps/finalizers",
      namespace: ns,
      name: "owner",
    });
    grants.push({
      user: USER,
      verb: "update",
      group: "",
      resource: "configmaps/finalizers",
      namespace: ns,
      name: "owner",
    });
    expect((await send("POST", secrets, owned("blocking", true, uid), { token: USER })).status).toBe(201);

    grants.push({ user: USER, verb: "patch", group: "", resource: "secrets", namespace: ns, name: "free" });
    const repoint = await send(
      "PATCH",
      `${secrets}/free`,
      { metadata: { ownerReferences: null } },
      { token: USER, contentType: "application/merge-patch+json" },
    );
    expect(repoint.status).toBe(403);
    expect(repoint.body.message).toContain("cannot set an ownerRef on a resource you can't delete");
  });

  it("needs create as well as patch for a server-side apply that creates the object", async () => {
    grants.push({ user: USER, verb: "patch", group: "", resource: "configmaps", namespace: ns, name: "applied" });
    const apply = () =>
      send(
        "PATCH",
        `/api/v1/namespaces/${ns}/configmaps/applied?fieldManager=op`,
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "applied" } },
        { token: USER, contentType: "application/apply-patch+yaml" },
      );
    const refused = await apply();
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(
      `configmaps "applied" is forbidden: User "${USER}" cannot create resource "configmaps" in API group "" in the namespace "${ns}"`,
    );
    grants.push({ user: USER, verb: "create", group: "", resource: "configmaps", namespace: ns });
    expect((await apply()).status).toBe(201);
  });
});
