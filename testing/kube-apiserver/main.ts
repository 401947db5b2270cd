import { parseArgs } from "node:util";
import { loadCrdManifests } from "@agentplane/crds";
import { startKubeApiServer } from "./server.ts";

// `node testing/kube-apiserver/main.ts --port 8001`: serves the agentplane CRDs and prints a kubeconfig path.
const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    host: { type: "string", default: "127.0.0.1" },
    verbose: { type: "boolean", default: false },
  },
});

const server = await startKubeApiServer({
  crds: loadCrdManifests(),
  port: Number(values.port),
  host: values.host,
  ...(values.verbose ? { log: (line: string) => console.log(line) } : {}),
});
console.log(`Kubernetes API test server listening on ${server.url}`);
console.log(`kubeconfig: ${server.kubeconfigPath}`);
console.log(`try: kubectl --kubeconfig ${server.kubeconfigPath} get agentdeployments`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => void server.close().then(() => process.exit(0)));
}
