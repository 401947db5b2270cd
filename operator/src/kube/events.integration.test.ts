import { loadCrdManifests } from "@agentplane/crds";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KubeApiServer, startKubeApiServer } from "../../../testing/kube-apiserver/server.ts";
import { KubeClient } from "./client.ts";
import { connectionFromKubeconfig } from "./config.ts";
import { EventRecorder, truncateUtf8 } from "./events.ts";

let kube: KubeApiServer;
beforeAll(async () => {
  kube = await startKubeApiServer({ crds: loadCrdManifests() });
});
afterAll(() => kube.close());

describe("Event notes", () => {
  it("cuts by bytes without splitting a character", () => {
    expect(truncateUtf8("abc", 1024)).toBe("abc");
    expect(truncateUtf8("é".repeat(600), 1024)).toBe("é".repeat(512));
    expect(truncateUtf8(`a${"é".repeat(600)}`, 1024)).toBe(`a${"é".repeat(511)}`);
    expect(truncateUtf8("😀😀", 7)).toBe("😀");
  });

  it("records an event whose message is long non-ASCII text (the API server counts bytes)", async () => {
    const recorder = new EventRecorder(
      new KubeClient(connectionFromKubeconfig(kube.kubeconfigPath)),
      "agentplane-operator",
      "test",
      pino({ level: "silent" }),
    );
    const regarding = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "default", uid: "u" } };
    recorder.record(regarding, "Warning", "Failed", "Apply", `Le déploiement a échoué : ${"é".repeat(1000)}`);
    const deadline = Date.now() + 5_000;
    while (kube.list("events.k8s.io/v1", "events", "default").length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const [event] = kube.list("events.k8s.io/v1", "events", "default") as { note?: string }[];
    expect(event?.note?.startsWith("Le déploiement a échoué")).toBe(true);
    expect(Buffer.byteLength(event?.note ?? "")).toBeLessThanOrEqual(1024);
  });
});
