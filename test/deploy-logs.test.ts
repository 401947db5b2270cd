import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { hashApiKey } from "@agentplane/common";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningControlPlane, startControlPlane } from "../control-plane/src/app.ts";
import type { ApiResponse } from "../control-plane/src/testing/harness.ts";
import { settingsFromEnv } from "../operator/src/config.ts";
import { type RunningOperator, startOperator } from "../operator/src/operator.ts";
import { eventually, startTestCluster, type TestCluster } from "../testing/kubelet/cluster.ts";
import type { ImageTable } from "../testing/kubelet/kubelet.ts";

/**
 * Deploy logs end to end: the operator rolls revisions out, the test kubelet runs their pods as
 * local processes and keeps their output per line with its time, the API test server forwards
 * `pods/log` to that kubelet, and the control plane serves it, filtered and paged, per revision.
 */
const NS = "agents";
const KUBECTL = "/usr/bin/kubectl";

// An agent server stand-in: a few log lines (pino JSON as the agent server writes, and plain text),
// then `/ok` answers so the rollout completes.
const LOGGER_SCRIPT = `
const lines = [
  { level: 30, msg: "server starting" },
  { level: 40, msg: "slow graph load", run_id: "run-2" },
  { level: 20, msg: "cache warm" },
];
for (const line of lines) console.log(JSON.stringify(line));
console.log("plain text line");
console.error(JSON.stringify({ level: 50, msg: "run failed: boom", run_id: "run-1" }));
require("node:http").createServer((_q, s) => s.end('{"ok":true}')).listen(Number(process.env.PORT), "127.0.0.1");
`;
const IMAGES: ImageTable = {
  "registry.example/logger:1": () => ({ command: process.execPath, args: ["-e", LOGGER_SCRIPT] }),
  "registry.example/crash:1": () => ({
    command: process.execPath,
    args: ["-e", 'console.error("fatal: MODEL_API_KEY is not set"); process.exit(3)'],
  }),
};

let cluster: TestCluster;
let controlPlane: RunningControlPlane;
let operator: RunningOperator;
const key = `logs-${randomUUID()}`;

const api = async (path: string, init: { method?: string; body?: unknown } = {}): Promise<ApiResponse> => {
  const response = await fetch(`${controlPlane.url}${path}`, {
    method: init.method ?? "GET",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: await response.json() };
};

async function deploy(name: string, image: string, terminal: string) {
  const created = await api("/v2/deployments", {
    method: "POST",
    body: {
      name,
      source: "external_docker",
      source_config: { listener_config: { k8s_namespace: NS }, resource_spec: { min_scale: 1, max_scale: 1 } },
      source_revision_config: { image_uri: image },
      secrets: [],
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const { id, latest_revision_id: revisionId } = created.body as { id: string; latest_revision_id: string };
  const revision = await eventually(
    async () => {
      const r = (await api(`/v2/deployments/${id}/revisions/${revisionId}`)).body;
      return r.status === terminal ? r : undefined;
    },
    60_000,
    `revision of ${name} to be ${terminal}`,
  );
  return { id, revisionId, revision };
}

beforeAll(async () => {
  cluster = await startTestCluster(IMAGES, "redis://127.0.0.1:1");
  await cluster.createNamespace(NS);
  controlPlane = await startControlPlane({
    port: 0,
    host: "127.0.0.1",
    kubeconfigPath: cluster.api.kubeconfigPath,
    layout: { kind: "shared", namespaces: [NS] },
    providersNamespace: NS,
    apiKeys: [{ hash: hashApiKey(key), organization_id: randomUUID(), workspace_ids: [randomUUID()] }],
    logLevel: "silent",
  });
  operator = await startOperator(
    cluster.connection,
    settingsFromEnv({ HEALTH_PORT: "0", HEALTH_HOST: "127.0.0.1", LEADER_ELECTION: "false", POLL_SECONDS: "1" }),
    pino({ level: "silent" }),
  );
}, 60_000);

afterAll(async () => {
  await operator?.close();
  await controlPlane?.close();
  await cluster?.close();
});

describe("deploy logs of a running revision", () => {
  let id: string;
  let revisionId: string;
  const logs = (query: string) => api(`/v2/deployments/${id}/revisions/${revisionId}/logs?type=deploy&${query}`);

  beforeAll(async () => {
    ({ id, revisionId } = await deploy("logger", "registry.example/logger:1", "DEPLOYED"));
    await eventually(
      async () => {
        const res = await logs("");
        if (res.status !== 200) throw new Error(JSON.stringify(res));
        return res.body.logs.length >= 5;
      },
      20_000,
      "five log lines",
    );
  }, 90_000);

  it("gives each line with its time, level, message, pod and run", async () => {
    const { body } = await logs("");
    expect(body.next_offset).toBeNull();
    const byMessage = Object.fromEntries(body.logs.map((e: { message: string }) => [e.message, e]));
    expect(Object.keys(byMessage).sort()).toEqual(
      ["cache warm", "plain text line", "run failed: boom", "server starting", "slow graph load"].sort(),
    );
    expect(byMessage["run failed: boom"]).toMatchObject({ level: "ERROR", run_id: "run-1", revision_id: revisionId });
    expect(byMessage["slow graph load"]).toMatchObject({ level: "WARNING", run_id: "run-2" });
    expect(byMessage["cache warm"]).toMatchObject({ level: "DEBUG", run_id: null });
    expect(byMessage["plain text line"]).toMatchObject({ level: "INFO" });
    expect(byMessage["server starting"].pod_name).toMatch(/^agent-/);
    const times = body.logs.map((e: { timestamp: string }) => e.timestamp);
    expect([...times].sort()).toEqual(times);
    expect(Math.abs(Date.parse(times[0]) - Date.now())).toBeLessThan(120_000);
  });

  it("filters by level (and more severe), text, run and time", async () => {
    const messages = async (query: string) =>
      (await logs(query)).body.logs.map((e: { message: string }) => e.message).sort();
    expect(await messages("level=WARNING")).toEqual(["run failed: boom", "slow graph load"]);
    expect(await messages("query=BOOM")).toEqual(["run failed: boom"]);
    expect(await messages("run_id=run-2")).toEqual(["slow graph load"]);
    const all = (await logs("")).body.logs as { timestamp: string }[];
    const last = all.at(-1)?.timestamp ?? "";
    expect(await messages(`start_time=${new Date(Date.parse(last) + 1).toISOString()}`)).toEqual([]);
    expect((await messages(`end_time=${new Date(Date.parse(last) + 1).toISOString()}`)).length).toBe(all.length);
  });

  it("pages both ways with opaque cursors", async () => {
    const all = (await logs("")).body.logs as { id: string }[];
    const seen: string[] = [];
    let offset: string | null = null;
    do {
      const res = await logs(`limit=2${offset ? `&offset=${offset}` : ""}`);
      seen.push(...res.body.logs.map((e: { id: string }) => e.id));
      offset = res.body.next_offset;
    } while (offset);
    expect(seen).toEqual(all.map((e) => e.id));
    const newest = (await logs("order=desc&limit=3")).body;
    expect(newest.logs.map((e: { id: string }) => e.id)).toEqual(
      all
        .map((e) => e.id)
        .reverse()
        .slice(0, 3),
    );
    const rest = (await logs(`order=desc&limit=3&offset=${newest.next_offset}`)).body;
    expect(rest.logs.map((e: { id: string }) => e.id)).toEqual(
      all
        .map((e) => e.id)
        .reverse()
        .slice(3, 6),
    );
  });

  it("serves the same through /v2/deployment-logs, per deployment or revision", async () => {
    const all = (await logs("")).body.logs;
    const page = await api(`/v2/deployment-logs?deployment_id=${id}&page_size=100`);
    expect(page).toEqual({ status: 200, body: { items: all, next_cursor: null } });
    const first = (await api(`/v2/deployment-logs?deployment_id=${id}&revision_id=${revisionId}&page_size=2`)).body;
    expect(first.items).toEqual(all.slice(0, 2));
    const second = (await api(`/v2/deployment-logs?deployment_id=${id}&page_size=2&cursor=${first.next_cursor}`)).body;
    expect(second.items).toEqual(all.slice(2, 4));
  });

  it.skipIf(!existsSync(KUBECTL))("is what kubectl logs shows for the pod", async () => {
    const pod = (await logs("")).body.logs[0].pod_name as string;
    const { stdout } = await promisify(execFile)(KUBECTL, [
      "--kubeconfig",
      cluster.api.kubeconfigPath,
      "logs",
      "-n",
      NS,
      pod,
      "-c",
      "agent-server",
    ]);
    expect(stdout).toContain('"msg":"run failed: boom"');
    expect(stdout).toContain("plain text line\n");
  });
});

describe("deploy logs of a failed revision", () => {
  it("start with the reason, then show what the crashing container wrote", async () => {
    const { id, revisionId, revision } = await deploy("crasher", "registry.example/crash:1", "DEPLOY_FAILED");
    expect(revision.status_message).toMatch(/CrashLoopBackOff/);
    const { body } = await api(`/v2/deployments/${id}/revisions/${revisionId}/logs?type=deploy&level=ERROR`);
    expect(body.logs[0]).toMatchObject({ level: "ERROR", pod_name: null });
    // The message counts the restarts: one may have come between the two reads.
    const now = (await api(`/v2/deployments/${id}/revisions/${revisionId}`)).body.status_message;
    expect([revision.status_message, now]).toContain(body.logs[0].message);
    const output = await api(`/v2/deployments/${id}/revisions/${revisionId}/logs?type=deploy&query=MODEL_API_KEY`);
    // Each restart wrote the line again.
    expect(output.body.logs.length).toBeGreaterThanOrEqual(2);
    expect(output.body.logs[0]).toMatchObject({ message: "fatal: MODEL_API_KEY is not set", level: "INFO" });
  }, 90_000);
});
