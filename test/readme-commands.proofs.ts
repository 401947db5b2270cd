// How each command the README and its first-step pages show is proven: run as written by a test,
// or checked where it needs Docker, k3d or a real cluster. test/readme-commands.test.ts reads it
// (and fails on a shown command that is not here); docs/testing.md#commands-in-the-docs lists
// what is only checked.
import { commandKey, commandLines, docBlocks, inlineCommands } from "../testing/doc-commands.ts";

/** The pages a new user reads first: the README and the pages it sends them to for first steps. */
export const PAGES = [
  "README.md",
  "CONTRIBUTING.md",
  "docs/install.md",
  "docs/control-plane.md",
  "docs/agent-server.md",
  "docs/testing.md",
];
/** This page's own account of the checks: its commands are the documented checks themselves. */
export const ACCOUNT = { file: "docs/testing.md", section: "Commands in the docs" };
/** Sections whose every shell block a test runs whole, as written. */
export const SECTIONS_RUN_WHOLE = [
  { file: "docs/control-plane.md", section: "Run the whole platform on your laptop", test: "test/platform.test.ts" },
];

export const T = {
  classified: "every command the docs show is classified",
  path: "CONTRIBUTING's PATH line puts the project's Node 24 first",
  helm: "install.md's API key, values file and helm install (client dry run) as written",
  kube: "the Kubernetes API test server and the docs' kubectl commands against it",
  make: "every make target the docs name exists and its recipe's programs are installed",
  chart: "make chart-docs and make chart-crds leave a fresh copy unchanged",
  dev: "make dev builds a fresh copy, answers /ok and the README's SDK call",
  cli: "the agent server's dev and serve commands start as written and stop on Ctrl-C or SIGTERM",
  images: "agent-server dockerfile writes the Dockerfile and .dockerignore; build stops for want of Docker",
  controlPlane: "the control plane starts as written on ~/.kube/config and a key file",
};
const PLATFORM = {
  quickStart: "test/platform.test.ts: runs every command of the docs section as written",
  install: "test/platform.test.ts: runs install.md's deploy steps against the platform",
};

type Proof = { ran: string } | { checked: string; why: string };
const DOCKER = "needs a Docker engine";
const CLUSTER = "needs a real cluster";

/** How each command is proven, by its first line as shown (comment dropped); blocks of `ts` by file and section. */
export const PROOFS: Record<string, Proof> = {
  // make targets
  "make dev": { ran: T.dev },
  "make dev PORT=9000": { ran: T.dev },
  "make build": { ran: T.dev },
  "npm ci": {
    checked: T.make,
    why: "what make's install step runs; a fresh install was run by hand (docs/testing.md)",
  },
  "make install": { checked: T.make, why: "a fresh install was run by hand on Node 20 (docs/testing.md)" },
  "make platform": { ran: "test/platform.test.ts: prints the URLs, key and kubeconfig and writes them to <dir>/env" },
  "make test": { checked: T.make, why: "runs every test (~7 min): too long to run inside a test" },
  "make test-unit": { checked: T.make, why: "runs a whole test project: too long to run inside a test" },
  "make test-integration": { checked: T.make, why: "runs a whole test project: too long to run inside a test" },
  "make lint": { checked: T.make, why: "biome and tsc over the repository take minutes on 2 cores" },
  "make format": { checked: T.make, why: "rewrites files; its check half is make lint" },
  "make bench": { checked: T.make, why: "every benchmark takes minutes" },
  "npx node --conditions=source bench/run.ts <area>": { checked: T.make, why: "benchmarks take minutes" },
  "make bench-compare BASE=<git ref>": { checked: T.make, why: "alternating benchmark windows take minutes" },
  "make chart-docs": { ran: T.chart },
  "npx node scripts/chart-values-table.ts --write docs/install.md": { ran: T.chart },
  "make chart-crds": { ran: T.chart },
  "make images": { checked: T.make, why: `${DOCKER}; test/packaging.test.ts runs its script with DRY_RUN=1` },
  "make cluster-up": {
    checked: T.make,
    why: `${DOCKER} and k3d; test/packaging.test.ts runs its script with DRY_RUN=1`,
  },
  "make cluster-e2e": {
    checked: T.make,
    why: `${DOCKER} and k3d; test/packaging.test.ts runs its script with DRY_RUN=1`,
  },
  "make cluster-down": {
    checked: T.make,
    why: `${DOCKER} and k3d; test/packaging.test.ts runs its script with DRY_RUN=1`,
  },
  "make cluster-*": { checked: T.make, why: `${DOCKER} and k3d (the four targets above)` },
  "DRY_RUN=1 scripts/cluster-up.sh": { ran: "test/packaging.test.ts: cluster scripts" },
  // the project's tools
  "export PATH=$PWD/node_modules/.bin:$PATH": { ran: T.path },
  "npx node …": { ran: T.cli },
  "npx vitest run <path>": { checked: T.make, why: "the form of every test run here; runs tests" },
  "npx vitest run control-plane/src": { checked: T.make, why: "runs a component's tests: too long inside a test" },
  "npx biome check --write <files>": { checked: T.make, why: "rewrites files; make lint's check" },
  "apt-get install redis-server": { checked: T.make, why: "installs system packages; done on the test machines" },
  "apt-get install chromium": { checked: T.make, why: "installs system packages; done on the test machines" },
  // agent server
  "npx node agent-server/dist/cli/main.js dev --config path/to/langgraph.json --port 8000": { ran: T.cli },
  "npx node agent-server/dist/cli/main.js dev --config /path/to/your/project/langgraph.json --port 8000": {
    ran: T.cli,
  },
  "REDIS_URI=redis://redis:6379 AGENTPLANE_API_KEYS_FILE=/etc/agentplane/api-keys": { ran: T.cli },
  "REDIS_URI=redis://… npx node agent-server/dist/cli/main.js serve --config …": { ran: T.cli },
  "node_modules/.bin/node agent-server/dist/cli/main.js serve …": { ran: T.cli },
  'printf %s "$KEY" | sha256sum': { ran: T.helm },
  "README.md ts block under Quick start: two commands": { ran: T.dev },
  "npx --no agent-server dockerfile -c ~/my-agent/langgraph.json -o ~/my-agent/Dockerfile": { ran: T.images },
  "npx --no agent-server dockerfile -c /path/to/your/project/langgraph.json": { ran: T.images },
  "npx --no agent-server build -t registry.example.com/me/my-agent:1 -c ~/my-agent/langgraph.json": {
    checked: T.images,
    why: `${DOCKER}: run as written, it stops before any work saying so`,
  },
  "docker push registry.example.com/me/my-agent:1": { checked: T.images, why: `${DOCKER} and a registry` },
  // install on Kubernetes
  "docker tag agentplane/platform:0.1.0 registry.example.com/agentplane/platform:0.1.0": {
    checked: T.helm,
    why: `${DOCKER}; the tag is the image make images builds`,
  },
  "docker push registry.example.com/agentplane/platform:0.1.0": { checked: T.helm, why: `${DOCKER} and a registry` },
  'export AGENTPLANE_API_KEY="ap_$(openssl rand -hex 24)"': { ran: T.helm },
  'printf %s "$AGENTPLANE_API_KEY" | sha256sum': { ran: T.helm },
  "cat > my-values.yaml <<EOF": { ran: T.helm },
  "helm install agentplane charts/agentplane --namespace agentplane --create-namespace -f my-values.yaml": {
    checked: T.helm,
    why: `${CLUSTER} (the test API server has no RBAC or Ingress kinds): run with --dry-run=client`,
  },
  "scripts/cluster-helm.sh install agentplane charts/agentplane …": {
    checked: T.helm,
    why: "the same install through the wrapper",
  },
  "helm install": { checked: T.helm, why: "the install above" },
  "helm upgrade agentplane charts/agentplane -n agentplane -f my-values.yaml": {
    checked: T.helm,
    why: `${CLUSTER} with a release: same release, chart, namespace and values as the install`,
  },
  "helm upgrade": { checked: T.helm, why: "the upgrade above" },
  "helm uninstall agentplane -n agentplane": {
    checked: T.helm,
    why: `${CLUSTER} with a release: the install's release and namespace`,
  },
  "helm template": { ran: "test/helm.test.ts (every chart test renders with helm template)" },
  "kubectl label namespace ingress-nginx agentplane.dev/ingress=true": { ran: T.kube },
  "kubectl label namespace <ns> agentplane.dev/ingress=true": { ran: T.kube },
  "kubectl apply --server-side -f charts/agentplane/crds/": { ran: T.kube },
  "kubectl delete agentdeployments --all -A": { ran: T.kube },
  "kubectl delete crd agentdeployments.agentplane.dev agentrevisions.agentplane.dev": { ran: T.kube },
  "export AGENTPLANE_URL=https://agentplane.example.com": { ran: PLATFORM.install },
  "export TENANT=0b7a6a3e-93b5-4a77-8b4e-2f4f2b7c9c55": { ran: PLATFORM.install },
  'curl -fsS -X POST "$AGENTPLANE_URL/v2/deployments"': { ran: PLATFORM.install },
  "ID=$(jq -r .id deployment.json); REV=$(jq -r .latest_revision_id deployment.json)": { ran: PLATFORM.install },
  'until curl -fsS "$AGENTPLANE_URL/v2/deployments/$ID/revisions/$REV"': { ran: PLATFORM.install },
  'URL=$(curl -fsS "$AGENTPLANE_URL/v2/deployments/$ID" -H "X-Api-Key: $AGENTPLANE_API_KEY"': { ran: PLATFORM.install },
  "kubectl get agentdeployments -n agentplane-$TENANT": { ran: PLATFORM.install },
  "docs/install.md ts block under Deploy your first agent": { ran: PLATFORM.install },
  "kubectl port-forward -n agentplane-$TENANT svc/agent-$ID 8000": {
    checked: PLATFORM.install,
    why: "the test API server does not forward ports: the Service it names exists",
  },
  // control plane, the test API server
  "npm run build": { ran: T.dev },
  "KUBECONFIG=~/.kube/config": { ran: T.controlPlane },
  "kubectl get agentdeployments": { ran: PLATFORM.quickStart },
  "kubectl logs": { ran: PLATFORM.quickStart },
  "kubectl get": { ran: PLATFORM.quickStart },
  "npx node --conditions=source testing/kube-apiserver/main.ts --port 8001": { ran: T.kube },
  "docs/testing.md ts block under The Kubernetes API test server": {
    ran: "testing/kube-apiserver/*.test.ts (each starts the server so), and scripts/platform.ts",
  },
  "kubectl --kubeconfig <path> apply --server-side -f charts/agentplane/crds/ && kubectl --kubeconfig <path> get agd": {
    ran: T.kube,
  },
};

/** Every command of the pages: the key it is classified under and where it is shown. */
export function shownCommands(): { key: string; where: string }[] {
  const shown: { key: string; where: string }[] = [];
  for (const file of PAGES) {
    for (const block of docBlocks(file)) {
      const where = `${file}:${block.line}`;
      if (block.lang === "ts") shown.push({ key: `${file} ts block under ${block.section}`, where });
      if (block.lang !== "sh" && block.lang !== "bash") continue;
      if (SECTIONS_RUN_WHOLE.some((s) => s.file === file && s.section === block.section)) continue;
      for (const command of commandLines(block.text)) shown.push({ key: commandKey(command), where });
    }
    for (const span of inlineCommands(file)) {
      if (file === ACCOUNT.file && span.section === ACCOUNT.section) continue;
      shown.push({ key: span.text, where: `${file}:${span.line}` });
    }
  }
  return shown;
}
