import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import { createAgentDeployment, eventually, startTestCluster, type TestCluster } from "../testing/kubelet/cluster.ts";
import { freePort } from "../testing/redis-server.ts";
import type { BenchResult } from "./types.ts";

const IMAGE = "bench/agent:1";
const LATENCY_SAMPLES = 5;
const FLEET = 1_000;
const CREATE_CONCURRENCY = 16;
/** The V8 limits the operator is deployed with (NODE_OPTIONS, see docs/operator.md). */
const OPERATOR_NODE_OPTIONS = ["--max-semi-space-size=8", "--max-old-space-size=128"];
const builtMain = fileURLToPath(new URL("../operator/dist/main.js", import.meta.url));
/** `make bench` builds first: measure the operator as it ships (compiled JS), else run the sources. */
const operatorArgs = [
  ...OPERATOR_NODE_OPTIONS,
  ...(existsSync(builtMain)
    ? [builtMain]
    : ["--conditions=source", fileURLToPath(new URL("../operator/src/main.ts", import.meta.url))]),
];

function rssMb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  return line ? Math.round(Number(line[1]) / 1024) : Number.NaN;
}

/**
 * The operator as its own process against the in-repo API server; the test kubelet simulates pods
 * (instantly ready, no processes), so the figures are the operator's reconcile cost plus API round trips.
 */
export async function run(redisUrl: string): Promise<BenchResult[]> {
  const cluster: TestCluster = await startTestCluster({ [IMAGE]: () => "simulated" }, redisUrl);
  let operator: ChildProcess | undefined;
  try {
    await cluster.createNamespace("bench-one");
    await cluster.createNamespace("bench-fleet");
    const healthPort = await freePort();
    operator = spawn(process.execPath, operatorArgs, {
      env: {
        ...process.env,
        KUBECONFIG: cluster.api.kubeconfigPath,
        LEADER_ELECTION: "false",
        HEALTH_PORT: String(healthPort),
        HEALTH_HOST: "127.0.0.1",
        WORKERS: "16",
        POLL_SECONDS: "5",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "ignore", "inherit"],
    });
    await eventually(async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).ok, 30_000, "operator ready");

    const deployedAt = new Map<string, number>();
    const readyAt = new Map<string, number>();
    const unsubscribe = cluster.api.api.store.subscribe((event) => {
      const name = event.object.metadata.name;
      if (event.resource.plural === "agentrevisions") {
        if ((event.object as AgentRevision).status?.revisionStatus === "DEPLOYED" && !deployedAt.has(name)) {
          deployedAt.set(name, performance.now());
        }
      } else if (event.resource.plural === "agentdeployments") {
        const ready = (event.object as AgentDeployment).status?.conditions?.find((c) => c.type === "Ready");
        if (ready?.status === "True" && !readyAt.has(name)) readyAt.set(name, performance.now());
      }
    });

    const latencies: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const revisionId = randomUUID();
      const start = performance.now();
      await createAgentDeployment(cluster.kube, { namespace: "bench-one", id: randomUUID(), revisionId, image: IMAGE });
      await eventually(() => deployedAt.has(revisionId), 30_000, "DEPLOYED");
      latencies.push((deployedAt.get(revisionId) as number) - start);
    }
    latencies.sort((a, b) => a - b);

    const ids = Array.from({ length: FLEET }, () => randomUUID());
    const fleetStart = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATE_CONCURRENCY }, async () => {
        while (next < ids.length) {
          const id = ids[next++] as string;
          await createAgentDeployment(cluster.kube, {
            namespace: "bench-fleet",
            id,
            revisionId: randomUUID(),
            image: IMAGE,
          });
        }
      }),
    );
    await eventually(() => ids.every((id) => readyAt.has(id)), 180_000, `${FLEET} AgentDeployments Ready`);
    const fleetSeconds = (Math.max(...ids.map((id) => readyAt.get(id) as number)) - fleetStart) / 1000;
    unsubscribe();
    const pid = operator.pid as number;
    return [
      {
        name: "operator: AgentDeployment created -> DEPLOYED (median)",
        value: Math.round(latencies[Math.floor(latencies.length / 2)] ?? 0),
        unit: "ms",
      },
      {
        name: `operator: ${FLEET} AgentDeployments created -> all Ready`,
        value: Math.round(fleetSeconds * 10) / 10,
        unit: "s",
        target: "<= 60",
      },
      {
        name: `operator: RSS with ${FLEET} AgentDeployments`,
        value: rssMb(pid, "VmRSS"),
        unit: "MB",
        target: "<= 200",
      },
      {
        name: `operator: peak RSS with ${FLEET} AgentDeployments`,
        value: rssMb(pid, "VmHWM"),
        unit: "MB",
        target: "<= 200",
      },
      // Everything here shares the machine; the timings only mean something next to its load.
      {
        name: "operator: machine load average (1 min) after the run",
        value: Math.round((loadavg()[0] ?? 0) * 10) / 10,
        unit: `on ${cpus().length} CPUs`,
      },
    ];
  } finally {
    if (operator && operator.exitCode === null) {
      const exited = new Promise((resolve) => operator?.once("exit", resolve));
      operator.kill("SIGTERM");
      await exited;
    }
    await cluster.close();
  }
}
