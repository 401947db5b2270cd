import { deploymentBody, startHarness } from "../control-plane/src/testing/harness.ts";
import { measureLatencies, measureThroughput, percentile, round } from "./support/measure.ts";
import type { BenchResult } from "./types.ts";

const CREATE_SAMPLES = 300;
const SEEDED_DEPLOYMENTS = 1_000;
const SEED_CONCURRENCY = 8;
const LIST_SAMPLES = 200;
const GET_CLIENTS = 16;
const GET_SECONDS = 3;

/**
 * The control plane over the in-repo Kubernetes API test server (in-process, plain HTTP), so the
 * figures are the control plane's own cost plus the Kubernetes round trips it makes. Redis is unused.
 */
export async function run(_redisUrl: string): Promise<BenchResult[]> {
  const h = await startHarness();
  try {
    let created = 0;
    const create = async () => {
      const res = await h.api("POST", "/v2/deployments", { body: deploymentBody(`bench-${created++}`) });
      if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body.id as string;
    };
    const createLatencies = await measureLatencies(CREATE_SAMPLES, create);
    while (created < SEEDED_DEPLOYMENTS) {
      await Promise.all(Array.from({ length: Math.min(SEED_CONCURRENCY, SEEDED_DEPLOYMENTS - created) }, create));
    }
    const listPage = async () => {
      const res = await h.api("GET", "/v2/deployments?limit=20&offset=500");
      if (res.status !== 200 || res.body.resources.length !== 20) throw new Error(`list answered ${res.status}`);
    };
    const listLatencies = await measureLatencies(LIST_SAMPLES, listPage);
    const filtered = await measureLatencies(LIST_SAMPLES, () => h.api("GET", "/v2/deployments?name_contains=bench-99"));

    const ids = (await h.api("GET", "/v2/deployments?limit=100")).body.resources.map((d: { id: string }) => d.id);
    const getsPerSecond = await measureThroughput(GET_CLIENTS, GET_SECONDS * 1000, async (_worker, i) => {
      const res = await h.api("GET", `/v2/deployments/${ids[i % ids.length]}`);
      if (res.status !== 200) throw new Error(`get answered ${res.status}`);
    });

    return [
      { name: "control-plane create deployment p50", value: round(percentile(createLatencies, 50), 2), unit: "ms" },
      {
        name: "control-plane create deployment p99",
        value: round(percentile(createLatencies, 99), 2),
        unit: "ms",
        target: "<= 50",
      },
      {
        name: `control-plane list page p50 (${SEEDED_DEPLOYMENTS} deployments)`,
        value: round(percentile(listLatencies, 50), 2),
        unit: "ms",
      },
      {
        name: `control-plane list page p99 (${SEEDED_DEPLOYMENTS} deployments)`,
        value: round(percentile(listLatencies, 99), 2),
        unit: "ms",
        target: "<= 30",
      },
      { name: "control-plane list name_contains p50", value: round(percentile(filtered, 50), 2), unit: "ms" },
      {
        name: `control-plane GET deployment (${GET_CLIENTS} clients)`,
        value: Math.round(getsPerSecond),
        unit: "req/s",
      },
    ];
  } finally {
    await h.close();
  }
}
