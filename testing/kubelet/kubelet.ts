import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { COMPONENT_LABEL, INSTANCE_LABEL } from "../../operator/src/build/names.ts";
import { startInformer } from "../../operator/src/controller-runtime/informer.ts";
import { WorkQueue } from "../../operator/src/controller-runtime/work-queue.ts";
import { isNotFound, KubeClient, type KubeObject } from "../../operator/src/kube/client.ts";
import type { KubeConnection } from "../../operator/src/kube/config.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";
import { serveContainerLogs } from "./container-logs.ts";
import type { PodSpec } from "./pod-env.ts";
import { type ImageResolver, type ImageTable, PodRunner } from "./pod-runner.ts";
import { controllerRef, createPods, deploymentStatus, reportReplicaFailure } from "./replica-set.ts";
import { type StatefulSet, syncRedisStatefulSet } from "./statefulset.ts";

export type { ImageResolver, ImageTable } from "./pod-runner.ts";

interface Deployment extends KubeObject {
  spec: {
    replicas?: number;
    progressDeadlineSeconds?: number;
    template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
  };
  status?: Record<string, unknown>;
}

interface Service extends KubeObject {
  spec?: { type?: string; selector?: Record<string, string> };
  status?: { loadBalancer?: { ingress?: { ip: string; ports?: { port: number }[] }[] } };
}

export interface KubeletOptions {
  connection: KubeConnection;
  /** Image name -> how to run it; an image not in the table shows ImagePullBackOff. */
  images: ImageTable | ImageResolver;
  /** The test Redis every managed Redis StatefulSet stands for (the documented shortcut). */
  redisUrl: string;
  /** Where each pod's stdout and stderr go (`<pod>.log`); default a new temporary directory. */
  logDir?: string;
}

export interface Kubelet {
  /** The local URL of a ready pod of the Deployment, if any. */
  podUrls(namespace: string, deployment: string): string[];
  close(): Promise<void>;
}

const MANAGED = "app.kubernetes.io/managed-by=agentplane-operator";
/** The one Node this kubelet registers; its pods name it in `spec.nodeName`. */
export const NODE_NAME = "test-kubelet";
const TEMPLATE_HASH = "pod-template-hash";
const FIELD_MANAGER = "test-kubelet";

/**
 * A kubelet + Deployment controller + load balancer for the in-repo API server: each operator-made
 * Deployment gets a ReplicaSet per pod template and Pods run as local processes (see PodRunner);
 * Deployment status follows the processes' readiness probes; a LoadBalancer Service gets the ready
 * process's address as its ingress; Redis StatefulSets report ready at once because every agent
 * server is pointed at the test Redis instead (REDIS_URI override, REDIS_PREFIX per deployment).
 */
export async function startKubelet(options: KubeletOptions): Promise<Kubelet> {
  const kube = new KubeClient(options.connection);
  const log = pino({ level: "silent" });
  const logDir = options.logDir ?? mkdtempSync(join(tmpdir(), "kubelet-logs-"));
  const runners = new Map<string, PodRunner>();
  const rolloutStarted = new Map<string, { hash: string; at: number }>();
  const backoff = { baseMs: 100, maxMs: 5_000 };
  const containerLogs = await serveContainerLogs(logDir, (namespace, pod) => {
    return runners.get(`${namespace}/${pod}`)?.pod.spec.containers[0]?.name;
  });
  await registerNode(kube, containerLogs.port);

  const queue = new WorkQueue(
    async (key) => {
      const [kind, namespace, name] = key.split("/") as [string, string, string];
      if (kind === "deploy") await syncDeployment(namespace, name);
      if (kind === "sts") await syncStatefulSet(namespace, name);
      if (kind === "svc") await syncService(namespace, name);
      return undefined;
    },
    { workers: 16, baseDelayMs: 50, maxDelayMs: 2_000 },
  );
  const enqueue = (kind: string, obj: KubeObject) =>
    queue.add(`${kind}/${obj.metadata?.namespace}/${obj.metadata?.name}`);
  const ownerDeployment = (pod: KubeObject) => pod.metadata?.labels?.[INSTANCE_LABEL];

  const deployments = startInformer<Deployment>({
    kube,
    path: resourcePath(resources.deployment),
    labelSelector: MANAGED,
    onEvent: (d) => enqueue("deploy", d),
    log,
    backoff,
  });
  const pods = startInformer<KubeObject>({
    kube,
    path: resourcePath(resources.pod),
    labelSelector: MANAGED,
    onEvent: (pod) => {
      for (const deployment of deployments.cache.list(pod.metadata?.namespace)) {
        if (deployment.metadata?.labels?.[INSTANCE_LABEL] === ownerDeployment(pod)) enqueue("deploy", deployment);
      }
    },
    log,
    backoff,
  });
  const statefulSetFailures = new Map<string, string>();
  const statefulSets = startInformer<StatefulSet>({
    kube,
    path: resourcePath(resources.statefulSet),
    labelSelector: MANAGED,
    onEvent: (s) => enqueue("sts", s),
    log,
    backoff,
  });
  const services = startInformer<Service>({
    kube,
    path: resourcePath(resources.service),
    labelSelector: MANAGED,
    onEvent: (s) => enqueue("svc", s),
    log,
    backoff,
  });
  await Promise.all([deployments.synced, pods.synced, statefulSets.synced, services.synced]);
  queue.start();

  const runnersOf = (namespace: string, instance: string) =>
    [...runners.values()].filter((r) => r.pod.namespace === namespace && runnerInstance.get(r) === instance);
  const runnerInstance = new WeakMap<PodRunner, string>();

  async function syncDeployment(namespace: string, name: string): Promise<void> {
    const deployment = deployments.cache.get(name, namespace);
    const instance = deployment?.metadata?.labels?.[INSTANCE_LABEL];
    if (!deployment || deployment.metadata?.deletionTimestamp) {
      await stopRunners((r) => r.pod.namespace === namespace && r.pod.name.startsWith(`${name}-`));
      return;
    }
    const hash = createHash("sha256").update(JSON.stringify(deployment.spec.template)).digest("hex").slice(0, 10);
    const rsName = `${name}-${hash}`;
    const labels = { ...deployment.spec.template.metadata?.labels, [TEMPLATE_HASH]: hash };
    const rsPath = resourcePath(resources.replicaSet, namespace, rsName);
    const want = deployment.spec.replicas ?? 1;
    const replicaSet =
      (await kube.get<KubeObject>(rsPath)) ??
      (await kube.create<KubeObject>(resourcePath(resources.replicaSet, namespace), {
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        metadata: { name: rsName, namespace, labels, ownerReferences: [controllerRef(deployment)] },
        spec: {
          replicas: want,
          selector: { matchLabels: labels },
          // The template carries the hash label too, or the selector would not select its pods.
          template: { ...deployment.spec.template, metadata: { ...deployment.spec.template.metadata, labels } },
        },
      }));
    const live = pods.cache
      .list(namespace)
      .filter(
        (p) =>
          p.metadata?.name?.startsWith(`${name}-`) &&
          p.metadata.labels?.[TEMPLATE_HASH] &&
          !p.metadata.deletionTimestamp,
      );
    const current = live.filter((p) => p.metadata?.labels?.[TEMPLATE_HASH] === hash);
    const old = live.filter((p) => p.metadata?.labels?.[TEMPLATE_HASH] !== hash);
    const created = await createPods(kube, replicaSet, want - current.length, NODE_NAME);
    current.push(...created.pods);
    const replicaFailure = await reportReplicaFailure(kube, replicaSet, created.failure);
    for (const pod of current) ensureRunner(namespace, name, pod, deployment.spec.template.spec, instance);
    const currentRunners = current.map((p) => runners.get(`${namespace}/${p.metadata?.name}`));
    const readyCurrent = currentRunners.filter((r) => r?.ready).length;
    if (readyCurrent >= want) {
      for (const pod of old) {
        await stopRunners((r) => r.pod.namespace === namespace && r.pod.name === pod.metadata?.name);
        await kube.delete(resourcePath(resources.pod, namespace, pod.metadata?.name));
      }
    }
    const oldCount = readyCurrent >= want ? 0 : old.length;
    const rollout = rolloutStarted.get(`${namespace}/${name}`);
    if (rollout?.hash !== hash) rolloutStarted.set(`${namespace}/${name}`, { hash, at: Date.now() });
    const complete = readyCurrent >= want && oldCount === 0;
    const readyOld = old.filter((p) => runners.get(`${namespace}/${p.metadata?.name}`)?.ready).length;
    const status = deploymentStatus({
      generation: deployment.metadata?.generation,
      replicaSet: rsName,
      want,
      current: current.length,
      old: oldCount,
      ready: readyCurrent + (oldCount ? readyOld : 0),
      timedOut:
        Date.now() - (rolloutStarted.get(`${namespace}/${name}`)?.at ?? Date.now()) >
        (deployment.spec.progressDeadlineSeconds ?? 600) * 1000,
      replicaFailure,
    });
    if (JSON.stringify(status) !== JSON.stringify(deployment.status)) {
      await kube.mergePatch(`${resourcePath(resources.deployment, namespace, name)}/status`, { status }, FIELD_MANAGER);
    }
    if (!complete) queue.addAfter(`deploy/${namespace}/${name}`, 1_000);
    for (const service of services.cache.list(namespace)) {
      if (service.metadata?.labels?.[INSTANCE_LABEL] === instance) enqueue("svc", service);
    }
  }

  function ensureRunner(
    namespace: string,
    deployment: string,
    pod: KubeObject,
    spec: PodSpec,
    instance: string | undefined,
  ): void {
    const key = `${namespace}/${pod.metadata?.name}`;
    if (runners.has(key)) return;
    const runner = new PodRunner(
      { namespace, name: pod.metadata?.name as string, spec },
      {
        kube,
        images: options.images,
        logDir,
        envOverrides: (_pod, env) => ({
          REDIS_PREFIX: `agd:${instance}:`,
          ...(env.REDIS_URI?.includes(".svc.") ? { REDIS_URI: options.redisUrl } : {}),
        }),
        onChange: () => queue.add(`deploy/${namespace}/${deployment}`),
      },
    );
    runnerInstance.set(runner, instance ?? "");
    runners.set(key, runner);
    void runner.start();
  }

  async function stopRunners(match: (runner: PodRunner) => boolean): Promise<void> {
    const stopping = [...runners.entries()].filter(([, r]) => match(r));
    for (const [key] of stopping) runners.delete(key);
    await Promise.all(stopping.map(([, r]) => r.stop()));
  }

  async function syncStatefulSet(namespace: string, name: string): Promise<void> {
    const sts = statefulSets.cache.get(name, namespace);
    if (!sts || sts.metadata?.deletionTimestamp || sts.status?.readyReplicas === 1) return;
    const ready = await syncRedisStatefulSet(kube, sts, NODE_NAME, statefulSetFailures);
    // The StatefulSet controller retries a refused pod with backoff; a raised quota lets it through.
    if (!ready) queue.addAfter(`sts/${namespace}/${name}`, 1_000);
  }

  async function syncService(namespace: string, name: string): Promise<void> {
    const service = services.cache.get(name, namespace);
    if (!service || service.spec?.type !== "LoadBalancer") return;
    if (service.metadata?.labels?.[COMPONENT_LABEL] !== "agent-server") return;
    const instance = service.metadata?.labels?.[INSTANCE_LABEL] as string;
    const ready = runnersOf(namespace, instance).filter((r) => r.ready);
    // Newest pod first: during a rollout the new revision takes the traffic once it is ready.
    const target = ready.at(-1);
    if (!target) return;
    const ingress = [{ ip: "127.0.0.1", ports: [{ port: target.port, protocol: "TCP" }] }];
    if (JSON.stringify(service.status?.loadBalancer?.ingress) === JSON.stringify(ingress)) return;
    try {
      await kube.mergePatch(
        `${resourcePath(resources.service, namespace, name)}/status`,
        { status: { loadBalancer: { ingress } } },
        FIELD_MANAGER,
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  return {
    podUrls: (namespace, deployment) => {
      const instance = deployments.cache.get(deployment, namespace)?.metadata?.labels?.[INSTANCE_LABEL] ?? "";
      return runnersOf(namespace, instance)
        .filter((r) => r.ready)
        .map((r) => `http://127.0.0.1:${r.port}`);
    },
    close: async () => {
      await queue.stop();
      await stopRunners(() => true);
      await Promise.all([deployments.stop(), pods.stop(), statefulSets.stop(), services.stop(), containerLogs.close()]);
    },
  };
}

/**
 * Creates (or takes over) the Node, with the address and port of this kubelet's log endpoint where
 * the API server looks for them when it serves `pods/log`.
 */
async function registerNode(kube: KubeClient, port: number): Promise<void> {
  const path = "/api/v1/nodes";
  if (!(await kube.get(`${path}/${NODE_NAME}`))) {
    await kube.create(path, { apiVersion: "v1", kind: "Node", metadata: { name: NODE_NAME } });
  }
  const status = {
    addresses: [
      { type: "InternalIP", address: "127.0.0.1" },
      { type: "Hostname", address: NODE_NAME },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: port } },
    conditions: [
      { type: "Ready", status: "True", reason: "KubeletReady", message: "test kubelet is posting ready status" },
    ],
  };
  await kube.mergePatch(`${path}/${NODE_NAME}/status`, { status }, FIELD_MANAGER);
}
