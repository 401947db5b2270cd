import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, spawnServer } from "../../agent-server/src/runs/testing/process.ts";
import { testRedisUrl } from "../../testing/redis.ts";
import { type ReferenceServer, referenceCliPath, startReferenceServer } from "../../testing/reference-server.ts";

/**
 * Differential tests: the same request sequence, through the official SDK, against the reference
 * server (`langgraphjs dev`) and against ours, both serving the same project; the normalised
 * results must be equal. See test/compat/README.md.
 */

/** The SDK's `Client` class, whichever installed version it comes from. */
export type ClientClass = typeof Client;

export interface SdkUnderTest {
  /** The package the client was imported from, e.g. `@langchain/langgraph-sdk`. */
  name: string;
  version: string;
  Client: ClientClass;
}

/** `Client` and version of an SDK package, by package name or by the path of its directory. */
async function loadSdk(specifier: string): Promise<Omit<SdkUnderTest, "name">> {
  const entry = specifier.startsWith("/")
    ? pathToFileURL(createRequire(`${specifier}/`).resolve(specifier)).href
    : specifier;
  const sdk = (await import(entry)) as { Client: ClientClass };
  const manifest = specifier.startsWith("/")
    ? pathToFileURL(`${specifier}/package.json`).href
    : `${specifier}/package.json`;
  const { version } = (await import(manifest, { with: { type: "json" } })).default as { version: string };
  return { version, Client: sdk.Client };
}

/**
 * The SDK versions to run the suites with: the pinned `@langchain/langgraph-sdk` and, when installed
 * under that alias, the newest 1.x as `@langchain/langgraph-sdk-1`; also any SDK package
 * directories listed in `AGENTPLANE_COMPAT_SDKS` (comma-separated), to try a version without
 * changing the lockfile. A missing alias is reported (`missing`) so suites can say why it is
 * skipped instead of passing silently.
 */
export async function sdkVersions(env = process.env): Promise<{ available: SdkUnderTest[]; missing: string[] }> {
  const extra = (env.AGENTPLANE_COMPAT_SDKS ?? "").split(",").filter(Boolean);
  const available: SdkUnderTest[] = [];
  const missing: string[] = [];
  for (const name of ["@langchain/langgraph-sdk", "@langchain/langgraph-sdk-1", ...extra]) {
    try {
      available.push({ name, ...(await loadSdk(name)) });
    } catch (error) {
      // An alias that is not installed is expected; a listed directory that does not load is a mistake.
      if (extra.includes(name)) throw error;
      missing.push(name);
    }
  }
  return { available, missing };
}

const versions = await sdkVersions();

function defineSdkSuites(define: (sdk: SdkUnderTest) => void, concurrent: boolean): void {
  (concurrent ? describe.concurrent : describe).each(versions.available)("$name $version", define);
  for (const name of versions.missing) {
    describe.skip(`${name} (not installed: see test/compat/README.md)`, () => {
      it("runs the suite with this SDK version", () => {});
    });
  }
}

/**
 * Defines the suite once per installed SDK version (`describe.each`); a version that is not
 * installed shows up as a skipped suite saying so. `sdkSuites.concurrent` runs a version's tests
 * at once (up to vitest's `maxConcurrency`), for files whose scenarios each work on threads of
 * their own: the reference starts a queued run up to a second late (its workers poll), so one
 * scenario at a time a file mostly waits.
 */
export const sdkSuites = Object.assign((define: (sdk: SdkUnderTest) => void) => defineSdkSuites(define, false), {
  concurrent: (define: (sdk: SdkUnderTest) => void) => defineSdkSuites(define, true),
});

/** The project most suites run: chat (tool loop), review (subgraph HITL), counter (factory), loop. */
export const agentsProject = new URL("./projects/agents/langgraph.json", import.meta.url).pathname;

export type ServerKind = "reference" | "ours";

export interface ServerUnderTest {
  kind: ServerKind;
  url: string;
  logs(): string;
}

/** A client with retries off: a 5xx must show up as the status it is, not as a slow retry loop. */
export const clientFor = (sdk: SdkUnderTest, server: ServerUnderTest): Client =>
  new sdk.Client({ apiUrl: server.url, callerOptions: { maxRetries: 0 } });

/** What a scenario sees: a client of one SDK version on one of the two servers. */
export interface ScenarioContext {
  client: Client;
  server: ServerUnderTest;
  sdk: SdkUnderTest;
}

/** A request sequence; it returns what must be the same on both servers (normalised before comparison). */
export type Scenario<T = unknown> = (ctx: ScenarioContext) => Promise<T>;

export interface CompatServers {
  reference: ServerUnderTest;
  ours: ServerUnderTest;
  /**
   * Runs `scenario` against both servers (concurrently: they are separate processes) and expects
   * the normalised results to be equal; returns both for further assertions.
   */
  compare<T>(sdk: SdkUnderTest, scenario: Scenario<T>, options?: CompareOptions): Promise<Compared>;
  /** Runs `scenario` against one server only (for behaviour only ours has, or differences kept on purpose). */
  run<T>(kind: ServerKind, sdk: SdkUnderTest, scenario: Scenario<T>): Promise<T>;
}

export interface CompareOptions {
  /**
   * Object keys dropped (at any depth) before comparing, each with the reason it differs;
   * every reason must also be listed in docs/compatibility.md.
   */
  ignoreKeys?: Record<string, string>;
}

/**
 * Fields our server adds where the reference has none (each in docs/compatibility.md): dropped
 * from our object only where the reference's object at the same place lacks them.
 */
export const EXTRA_KEYS: Record<string, string> = {
  checkpoint_id: "ThreadState repeats checkpoint.checkpoint_id at the top, as the Python server does",
  parent_checkpoint_id: "ThreadState repeats parent_checkpoint.checkpoint_id, as the Python server does",
  interrupts: "Thread.interrupts and ThreadState.interrupts, declared by the SDK's types",
  state_updated_at: "Thread.state_updated_at, declared by the SDK's types",
  writes: "checkpoint metadata records each step's writes, as LangGraph (Python) does",
  graph_id: "every checkpoint's metadata names its graph (the reference leaves it out after supersteps)",
  configurable: "POST /threads/{id}/state also answers {configurable}, the shape the JS SDK types",
  thread_id: "run metadata names its thread",
};

/** Fields the reference adds where ours has none (each in docs/compatibility.md), dropped the same way. */
export const MISSING_KEYS: Record<string, string> = {
  langgraph_version: "LangSmith deployment metadata the reference stamps on runs",
  langgraph_plan: "LangSmith deployment metadata",
  langgraph_host: "LangSmith deployment metadata",
  langgraph_api_url: "LangSmith deployment metadata",
  ls_integration: "LangSmith tracing tag",
  metadata: "the reference copies a run's metadata into kwargs.config",
  assistant_id: "the reference copies the assistant id into run metadata",
  graph_id: "the reference copies the graph id into run metadata",
  "user-agent":
    "the reference forwards request headers into a run's configurable (and so into checkpoint metadata) by default; this server only those http.configurable_headers names",
  checkpoint_map: "the reference keeps a subgraph task's config keys in its checkpoints' metadata",
  checkpoint_ns: "(as checkpoint_map)",
  langgraph_checkpoint_ns: "(as checkpoint_map)",
  langgraph_node: "(as checkpoint_map)",
  langgraph_path: "(as checkpoint_map)",
  langgraph_step: "(as checkpoint_map)",
  langgraph_triggers: "(as checkpoint_map)",
};

/** Drops from `ours` the allowed keys that `reference` lacks at the same place, and from `reference` the reverse. */
function alignDocumented(ours: unknown, reference: unknown): [unknown, unknown] {
  if (Array.isArray(ours) && Array.isArray(reference)) {
    const pairs = ours.map((item, i) => alignDocumented(item, reference[i]));
    const rest = reference.slice(ours.length);
    return [pairs.map(([o]) => o), [...pairs.map(([, r]) => r), ...rest]];
  }
  if (!isRecord(ours) || !isRecord(reference)) return [ours, reference];
  const o: Record<string, unknown> = {};
  const r: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(ours)) {
    if (key in EXTRA_KEYS && !(key in reference)) continue;
    o[key] = value;
  }
  for (const [key, value] of Object.entries(reference)) {
    if (key in MISSING_KEYS && !(key in ours)) continue;
    r[key] = value;
  }
  for (const key of Object.keys(o)) {
    if (key in r) [o[key], r[key]] = alignDocumented(o[key], r[key]);
  }
  return [o, r];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export interface Compared {
  reference: unknown;
  ours: unknown;
}

/**
 * Starts the reference server and ours (a real `agent-server serve` process on Redis) on the
 * project of `configPath`, once for the calling file: call it at the top of a `describe`. `env`
 * is set for both. `referenceConfigPath` gives the reference another project, for projects it
 * cannot run (older LangGraph.js releases: see versions.test.ts).
 */
export function useCompatServers(
  configPath: string,
  env: Record<string, string> = {},
  referenceConfigPath = configPath,
): CompatServers {
  let reference: ReferenceServer | undefined;
  let ours: ServerProcess | undefined;
  const servers = {} as CompatServers;
  beforeAll(async () => {
    const cli = referenceCliPath();
    if (!cli) throw new Error("the reference server (@langchain/langgraph-cli) is not installed: run npm ci");
    // The reference bundles its own copy of LangSmith tracing; keep it from calling out.
    const quiet = { LANGSMITH_TRACING: "false", LANGCHAIN_TRACING_V2: "false", ...env };
    // Each side is kept as soon as it is up, so afterAll stops it even when the other failed to start.
    const [ref, own] = await Promise.all([
      startReferenceServer(cli, referenceConfigPath, quiet).then((server) => (reference = server)),
      // spawnServer's 1 s heartbeat: a run slower than that sends heartbeats the reference does
      // not, and the SDK must see the same events from both.
      spawnServer(testRedisUrl(), `compat-${randomUUID().slice(0, 8)}:`, quiet, configPath).then(
        (server) => (ours = server),
      ),
    ]);
    servers.reference = { kind: "reference", url: ref.url, logs: () => ref.logs() };
    servers.ours = { kind: "ours", url: own.url, logs: () => own.logs() };
  }, 90_000);
  afterAll(async () => {
    await Promise.all([reference?.stop(), ours?.stop()]);
  });
  servers.run = (kind, sdk, scenario) => {
    const server = servers[kind];
    return scenario({ client: clientFor(sdk, server), server, sdk });
  };
  servers.compare = async (sdk, scenario, options = {}) => {
    const [reference, ours] = await Promise.all([
      servers.run("reference", sdk, scenario),
      servers.run("ours", sdk, scenario),
    ]);
    const ignored = new Set(Object.keys(options.ignoreKeys ?? {}));
    // Aligned after numbering the ids, so objects keyed by ids (messages/metadata) line up.
    const [alignedOurs, alignedReference] = alignDocumented(normalise(ours, ignored), normalise(reference, ignored));
    const compared = { reference: alignedReference, ours: alignedOurs };
    expect(compared.ours).toEqual(compared.reference);
    return compared;
  };
  return servers;
}

// Uuids, and the 32-hex-digit ids LangGraph derives from them (interrupt ids).
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{32}\b/gi;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * Replaces what differs between two correct servers by placeholders: each distinct uuid (run,
 * thread, checkpoint, message ids, also inside strings such as `run-<uuid>`) by `<uuid:N>` numbered in
 * order of first appearance, so the same id in two places still compares equal and different ids
 * stay different; ISO timestamps by `<time>`. Keys are visited in sorted order, so the numbering
 * does not depend on the key order of a response. A key whose value is null is dropped, so it
 * equals an absent key (the two servers serialise messages' and checkpoints' unset fields one way
 * each; see docs/compatibility.md). `ignored` keys are dropped at any depth.
 */
export function normalise(value: unknown, ignored: ReadonlySet<string> = new Set()): unknown {
  const ids = new Map<string, string>();
  const placeholder = (uuid: string) => {
    const key = uuid.toLowerCase();
    if (!ids.has(key)) ids.set(key, `<uuid:${ids.size + 1}>`);
    return ids.get(key) as string;
  };
  const visit = (node: unknown): unknown => {
    if (typeof node === "string") return ISO_TIME.test(node) ? "<time>" : node.replace(UUID, placeholder);
    if (Array.isArray(node)) return node.map(visit);
    if (node && typeof node === "object") {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(node).sort()) {
        const item = (node as Record<string, unknown>)[key];
        if (ignored.has(key) || item === null || item === undefined) continue;
        out[key.replace(UUID, placeholder)] = visit(item);
      }
      return out;
    }
    return node;
  };
  return visit(value);
}

/** The HTTP status of a failed SDK call (its `HTTPError`), or the error itself when it is not one. */
export async function outcome<T>(call: Promise<T>): Promise<{ ok: T } | { status: number }> {
  try {
    return { ok: await call };
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    if (typeof status === "number") return { status };
    throw error;
  }
}

/** Every event of an SDK stream, as `{ event, data }`. */
export async function collect(stream: AsyncIterable<{ event: string; data: unknown }>) {
  const events: { event: string; data: unknown }[] = [];
  for await (const { event, data } of stream) events.push({ event, data });
  return events;
}

const STATE_FIELDS = ["values", "next", "tasks", "checkpoint", "parent_checkpoint", "metadata", "created_at"];
const TASK_FIELDS = ["id", "name", "path", "error", "interrupts", "checkpoint", "state", "result"];

const pick = (value: Record<string, unknown>, keys: string[]) =>
  Object.fromEntries(keys.filter((key) => key in value).map((key) => [key, value[key]]));

/**
 * A thread state with the fields the SDK's `ThreadState` type declares (also in its tasks'
 * subgraph states); the extra fields our server adds are listed in docs/compatibility.md.
 */
export function threadState(state: unknown): unknown {
  if (!state || typeof state !== "object") return state;
  const picked = pick(state as Record<string, unknown>, STATE_FIELDS);
  if (Array.isArray(picked.tasks)) {
    picked.tasks = picked.tasks.map((task: Record<string, unknown>) => {
      const fields = pick(task, TASK_FIELDS);
      return { ...fields, state: threadState(fields.state) };
    });
  }
  return picked;
}
