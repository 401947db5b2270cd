import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWithClients } from "./clients.ts";
import type { KubeObject } from "./store.ts";

/** ResourceQuota admission of Pods and the quota controller's status, with the apiserver's wording. */

let env: Awaited<ReturnType<typeof startWithClients>>;
const ns = "quota";

beforeAll(async () => {
  env = await startWithClients();
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
});
afterAll(() => env.kube.close());

async function send(method: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${env.kube.url}${path}`, {
    method,
    headers: { authorization: "Bearer agentplane-test", "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

const quotas = `/api/v1/namespaces/${ns}/resourcequotas`;
const pods = `/api/v1/namespaces/${ns}/pods`;
const pod = (name: string, resources: Record<string, unknown> = {}, container = "app") => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { containers: [{ name: container, image: "nginx", resources }] },
});

async function withQuota(hard: Record<string, string>, check: () => Promise<void>): Promise<void> {
  expect((await send("POST", quotas, { metadata: { name: "compute" }, spec: { hard } })).status).toBe(201);
  try {
    await check();
  } finally {
    await fetch(`${env.kube.url}${quotas}/compute`, { method: "DELETE" });
    for (const p of env.kube.list("v1", "pods", ns))
      await fetch(`${env.kube.url}${pods}/${p.metadata.name}`, { method: "DELETE" });
  }
}

describe("ResourceQuota admission", () => {
  it("refuses a pod over the pod count (403 exceeded quota)", async () => {
    await withQuota({ pods: "1" }, async () => {
      expect((await send("POST", pods, pod("first"))).status).toBe(201);
      const refused = await send("POST", pods, pod("second"));
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ reason: "Forbidden", details: { name: "second", kind: "pods" } });
      expect(refused.body.message).toBe(
        'pods "second" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1',
      );
    });
  });

  it("refuses a pod whose requests would go over, naming requested, used and limited", async () => {
    await withQuota({ "requests.cpu": "1", "requests.memory": "1Gi" }, async () => {
      const small = { requests: { cpu: "500m", memory: "256Mi" } };
      expect((await send("POST", pods, pod("a", small))).status).toBe(201);
      const refused = await send("POST", pods, pod("b", { requests: { cpu: "600m", memory: "256Mi" } }));
      expect(refused.status).toBe(403);
      expect(refused.body.message).toBe(
        'pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1',
      );
      expect((await send("POST", pods, pod("c", small))).status).toBe(201);
    });
  });

  it("refuses a container that does not state a quota'd compute resource (must specify)", async () => {
    await withQuota({ "requests.cpu": "2", "limits.memory": "2Gi" }, async () => {
      const refused = await send("POST", pods, pod("redis-0", { requests: { cpu: "100m" } }, "redis"));
      expect(refused.status).toBe(403);
      expect(refused.body.message).toBe(
        'pods "redis-0" is forbidden: failed quota: compute: must specify limits.memory for: redis',
      );
      // A limit alone is also the request (Pod defaulting), so this one states both.
      expect((await send("POST", pods, pod("ok", { limits: { cpu: "100m", memory: "64Mi" } }))).status).toBe(201);
    });
  });

  it("keeps status.hard and status.used current, and ignores finished pods", async () => {
    await withQuota({ pods: "2", "requests.memory": "1Gi" }, async () => {
      await send("POST", pods, pod("a", { requests: { memory: "256Mi" } }));
      await send("POST", pods, pod("b", { requests: { memory: "512Mi" } }));
      const status = async () => {
        for (let i = 0; i < 100; i++) {
          const quota = env.kube.get("v1", "resourcequotas", ns, "compute") as KubeObject & { status?: any };
          if (quota.status?.used?.pods === "2") return quota.status;
          await new Promise((r) => setTimeout(r, 20));
        }
        throw new Error("quota status not updated");
      };
      expect(await status()).toEqual({
        hard: { pods: "2", "requests.memory": "1Gi" },
        used: { pods: "2", "requests.memory": "768Mi" },
      });
      const done = env.kube.get("v1", "pods", ns, "a") as KubeObject;
      env.kube.api.update(
        env.kube.api.resource("v1", "pods"),
        ns,
        "a",
        { ...done, status: { phase: "Succeeded" } },
        {
          subresource: "status",
        },
      );
      expect((await send("POST", pods, pod("c", { requests: { memory: "256Mi" } }))).status).toBe(201);
    });
  });
});
