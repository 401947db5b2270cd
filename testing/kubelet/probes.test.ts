import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeClient } from "../../operator/src/kube/client.ts";
import { connectionFromKubeconfig } from "../../operator/src/kube/config.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";
import { type KubeApiServer, startKubeApiServer } from "../kube-apiserver/server.ts";
import type { PodSpec } from "./pod-env.ts";
import { PodRunner } from "./pod-runner.ts";

/** Listens on PORT: `/ok` answers (ready), `/live` fails (a wedged process that still accepts connections). */
const WEDGED = `require("node:http").createServer((req, res) => { res.statusCode = req.url === "/ok" ? 200 : 500; res.end(); }).listen(Number(process.env.PORT), "127.0.0.1");`;

describe("test kubelet probes", () => {
  let api: KubeApiServer;
  let kube: KubeClient;
  const runners: PodRunner[] = [];
  beforeAll(async () => {
    api = await startKubeApiServer({});
    kube = new KubeClient(connectionFromKubeconfig(api.kubeconfigPath));
    await kube.create("/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "probes" } });
  });
  afterAll(async () => {
    for (const runner of runners) await runner.stop();
    await api?.close();
  });

  it("restarts a container that does not answer its liveness probe", async () => {
    const spec: PodSpec = {
      containers: [
        {
          name: "app",
          image: "wedged",
          livenessProbe: { httpGet: { path: "/live", port: 8080 }, periodSeconds: 1, failureThreshold: 2 },
        },
      ],
    };
    await kube.create(resourcePath(resources.pod, "probes"), {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "wedged", namespace: "probes" },
      spec,
    });
    const runner = new PodRunner(
      { namespace: "probes", name: "wedged", spec },
      {
        kube,
        images: { wedged: () => ({ command: process.execPath, args: ["-e", WEDGED] }) },
        envOverrides: () => ({}),
        logDir: mkdtempSync(join(tmpdir(), "kubelet-probes-")),
        onChange: () => {},
      },
    );
    runners.push(runner);
    await runner.start();
    const restarts = async () => {
      const pod = await kube.get<{ status?: { containerStatuses?: { restartCount?: number }[] } }>(
        resourcePath(resources.pod, "probes", "wedged"),
      );
      return pod?.status?.containerStatuses?.[0]?.restartCount ?? 0;
    };
    await expect.poll(restarts, { timeout: 15_000, interval: 200 }).toBeGreaterThanOrEqual(1);
  }, 30_000);
});
