// `make platform`: the whole platform on loopback, without a cluster or Docker. Redis (a private
// redis-server), the Kubernetes API test server, the test kubelet (pods become local agent-server
// processes), the control plane with a generated API key, and the operator. Prints how to reach them
// and writes the same as shell assignments to <dir>/env. SIGINT/SIGTERM stop everything it started.
import { randomBytes, randomUUID } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { hashApiKey } from "@agentplane/common";
import { loadCrdManifests } from "@agentplane/crds";
import { pino } from "pino";
import { startControlPlane } from "../control-plane/src/app.ts";
import { loadConfig } from "../control-plane/src/config.ts";
import { settingsFromEnv } from "../operator/src/config.ts";
import { connectionFromKubeconfig } from "../operator/src/kube/config.ts";
import { startOperator } from "../operator/src/operator.ts";
import { startKubeApiServer } from "../testing/kube-apiserver/server.ts";
import { exampleAgentServer } from "../testing/kubelet/cluster.ts";
import { startKubelet } from "../testing/kubelet/kubelet.ts";
import { startRedisServer } from "../testing/redis-server.ts";

const REPO = resolve(import.meta.dirname, "..");
const { values } = parseArgs({
  options: {
    dir: { type: "string", default: join(REPO, ".platform") },
    port: { type: "string", default: "1985" },
  },
});
const dir = resolve(values.dir);
const logLevel = process.env.LOG_LEVEL ?? "warn";

// The image `make images` builds serves the example project; here every tag of its repository runs
// the example project from the sources, so a PATCH to another tag rolls out a new revision.
const version = JSON.parse(readFileSync(join(REPO, "agent-server/package.json"), "utf8")).version as string;
const EXAMPLE_REPOSITORY = "agentplane/agent-server";
const EXAMPLE_IMAGE = `${EXAMPLE_REPOSITORY}:${version}`;

/** What has started so far, stopped in reverse order. */
const started: { name: string; stop: () => Promise<void> }[] = [];
let stopping: Promise<void> | undefined;

function stopAll(): Promise<void> {
  stopping ??= (async () => {
    for (const { name, stop } of started.reverse()) {
      try {
        await stop();
      } catch (error) {
        console.error(`platform: stopping ${name}: ${(error as Error).message}`);
      }
    }
    // Pod logs stay for a look afterwards; what pointed at the stopped platform goes.
    for (const file of ["env", "kubeconfig", "api-keys.jsonl"]) rmSync(join(dir, file), { force: true });
  })();
  return stopping;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    console.log(`\nplatform: ${signal}, stopping everything it started…`);
    void stopAll().then(() => process.exit(0));
  });
}

try {
  mkdirSync(join(dir, "logs"), { recursive: true });

  const redis = await startRedisServer();
  started.push({ name: "redis-server", stop: redis.stop });

  const api = await startKubeApiServer({ crds: loadCrdManifests() });
  started.push({ name: "Kubernetes API test server", stop: api.close });
  // The API server's own kubeconfig lives in a temp dir; this copy has a path worth printing.
  const kubeconfig = join(dir, "kubeconfig");
  copyFileSync(api.kubeconfigPath, kubeconfig);
  const connection = connectionFromKubeconfig(kubeconfig);

  const kubelet = await startKubelet({
    connection,
    images: (image) => (image.startsWith(`${EXAMPLE_REPOSITORY}:`) ? exampleAgentServer() : undefined),
    redisUrl: redis.url,
    logDir: join(dir, "logs"),
  });
  started.push({ name: "test kubelet", stop: kubelet.close });

  const apiKey = `ap_${randomBytes(24).toString("hex")}`;
  const keysFile = join(dir, "api-keys.jsonl");
  const grant = { hash: hashApiKey(apiKey), organization_id: randomUUID(), workspace_ids: [randomUUID()] };
  writeFileSync(keysFile, `${JSON.stringify(grant)}\n`, { mode: 0o600 });
  // Through loadConfig, as `node control-plane/dist/main.js` reads its environment: the defaults are the product's.
  const controlPlane = await startControlPlane({
    ...loadConfig({ PORT: values.port, HOST: "127.0.0.1", CONTROL_PLANE_API_KEYS_FILE: keysFile, LOG_LEVEL: logLevel }),
    kubeconfigPath: kubeconfig,
  });
  started.push({ name: "control plane", stop: controlPlane.close });

  const operator = await startOperator(
    connection,
    settingsFromEnv({
      HEALTH_HOST: "127.0.0.1",
      HEALTH_PORT: "0",
      LEADER_ELECTION: "false",
      // The kubelet gives LoadBalancer Services a loopback address: the deployment's `url` answers.
      AGENT_SERVICE_TYPE: "LoadBalancer",
    }),
    pino({ name: "agentplane-operator", level: logLevel }),
  );
  started.push({ name: "operator", stop: operator.close });

  const env = {
    CONTROL_PLANE_URL: controlPlane.url,
    CONTROL_PLANE_API_KEY: apiKey,
    KUBECONFIG: kubeconfig,
    EXAMPLE_IMAGE,
  };
  // Unquoted where possible, so that `.`, `docker --env-file` and CI env files all read it alike.
  const shellValue = (value: string) =>
    /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
  writeFileSync(
    join(dir, "env"),
    Object.entries(env)
      .map(([name, value]) => `${name}=${shellValue(value)}\n`)
      .join(""),
    { mode: 0o600 },
  );
  console.log(`agentplane platform is up (Ctrl-C stops everything)

  control plane   ${controlPlane.url}   (API reference: ${controlPlane.url}/docs)
  API key         ${apiKey}   (X-Api-Key; agent servers accept it too)
  kubeconfig      ${kubeconfig}
  Redis           ${redis.url}
  images          ${EXAMPLE_REPOSITORY}:<any tag> runs the example project (agent-server/example)
  example image   ${EXAMPLE_IMAGE}
  pod logs        ${join(dir, "logs")}/<pod>.log

  set -a; . ${join(dir, "env")}; set +a     # CONTROL_PLANE_URL, CONTROL_PLANE_API_KEY, KUBECONFIG, EXAMPLE_IMAGE
  kubectl get agentdeployments -A              # no kubectl? scripts/kubectl.sh takes the same arguments`);
} catch (error) {
  console.error(`platform: ${(error as Error).message}`);
  await stopAll();
  process.exit(1);
}
