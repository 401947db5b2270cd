import { type AgentDeployment, type AgentRevision, loadCrdManifests } from "@agentplane/crds";
import { pino } from "pino";
import { applyDefaults } from "../../../testing/kube-apiserver/admission.ts";
import { KubeApi, PATCH_TYPES } from "../../../testing/kube-apiserver/api.ts";
import { loadBuiltinValidators } from "../../../testing/kube-apiserver/builtin-validation.ts";
import { KubeError } from "../../../testing/kube-apiserver/errors.ts";
import { parseResourcePath } from "../../../testing/kube-apiserver/request.ts";
import {
  builtinResourceTypes,
  crdResourceTypes,
  ResourceRegistry,
  type ResourceType as ServedType,
} from "../../../testing/kube-apiserver/resources.ts";
import { fieldSelector, labelSelector } from "../../../testing/kube-apiserver/selectors.ts";
import { ObjectStore, type KubeObject as StoredObject } from "../../../testing/kube-apiserver/store.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../build/names.ts";
import { type BuildSettings, defaultBuildSettings } from "../build/settings.ts";
import type { ObjectCache } from "../controller-runtime/informer.ts";
import { createMetrics, type Metrics } from "../http/metrics.ts";
import { KubeApiError, type KubeList, type KubeObject } from "../kube/client.ts";
import type { EventType } from "../kube/events.ts";
import { type ResourceType, resources, resourceTypeOf } from "../kube/resources.ts";
import type { Caches } from "../reconcile/caches.ts";
import { Reconciler, type ReconcilerKube } from "../reconcile/reconciler.ts";
import { trimDeployment, trimPod, trimStatefulSet, trimToStatus } from "../reconcile/trim.ts";

/** One call that changes the cluster, as the reconciler sent it. */
export interface RecordedWrite {
  verb: "create" | "apply" | "merge-patch" | "json-patch" | "delete";
  kind: string;
  namespace: string | undefined;
  name: string;
  /** `status` for writes to the status subresource. */
  subresource: string | undefined;
  /** The request body (a copy): the applied intent, the merge patch or the JSON patch operations. */
  body: unknown;
}

/**
 * The API server side of a reconciler table test: the seeded objects live in the in-process
 * Kubernetes API test server's object semantics (server-side apply, generation, status subresource,
 * JSON patch `test`, finalizers), without HTTP; every write is recorded in the order it was sent.
 */
class RecordingKube implements ReconcilerKube {
  readonly writes: RecordedWrite[] = [];
  private readonly api: KubeApi;

  constructor(api: KubeApi) {
    this.api = api;
  }

  async get<T>(path: string): Promise<T | undefined> {
    const { resource, namespace, name } = this.resolve(path);
    return this.api.store.get(resource, namespace, name) as T | undefined;
  }

  async list<T>(path: string, selector?: string, fields?: string): Promise<KubeList<T>> {
    const { resource, namespace } = this.resolve(path);
    const items = this.api.store
      .list(resource, namespace)
      .filter(labelSelector(selector))
      .filter(fieldSelector(fields));
    return {
      metadata: { resourceVersion: String(this.api.store.resourceVersion) },
      items: structuredClone(items) as T[],
    };
  }

  async create<T>(path: string, body: unknown): Promise<T> {
    const target = this.record("create", path, body);
    // A create is posted to the collection: the name is the body's.
    (this.writes.at(-1) as RecordedWrite).name = (body as KubeObject).metadata?.name as string;
    return this.call(() => this.api.create(target.resource, target.namespace, structuredClone(body))) as T;
  }

  async apply<T>(path: string, body: unknown, fieldManager: string): Promise<T> {
    return this.patch("apply", PATCH_TYPES.apply, path, body, { fieldManager, force: true }) as T;
  }

  async mergePatch<T>(path: string, body: unknown, fieldManager: string): Promise<T> {
    return this.patch("merge-patch", PATCH_TYPES.merge, path, body, { fieldManager }) as T;
  }

  async jsonPatch<T>(path: string, ops: unknown[], fieldManager: string): Promise<T> {
    return this.patch("json-patch", PATCH_TYPES.json, path, ops, { fieldManager }) as T;
  }

  async delete(path: string, propagationPolicy = "Background"): Promise<void> {
    const target = this.record("delete", path, undefined);
    try {
      this.call(() =>
        this.api.delete(target.resource, target.namespace, target.name, {
          propagationPolicy: propagationPolicy as "Background",
        }),
      );
    } catch (error) {
      // Like KubeClient.delete: a missing object counts as deleted.
      if (!(error instanceof KubeApiError && error.code === 404)) throw error;
    }
  }

  private patch(
    verb: RecordedWrite["verb"],
    contentType: string,
    path: string,
    body: unknown,
    options: { fieldManager: string; force?: boolean },
  ): StoredObject {
    const target = this.record(verb, path, body);
    return this.call(() =>
      this.api.patch(target.resource, target.namespace, target.name, contentType, structuredClone(body), {
        ...options,
        ...(target.subresource === "status" ? { subresource: "status" as const } : {}),
      }),
    );
  }

  private record(verb: RecordedWrite["verb"], path: string, body: unknown) {
    const target = this.resolve(path);
    this.writes.push({
      verb,
      kind: target.resource.kind,
      namespace: target.namespace,
      name: target.name,
      subresource: target.subresource,
      body: structuredClone(body),
    });
    return target;
  }

  private resolve(path: string) {
    const parsed = parseResourcePath(path, (apiVersion, plural) => this.api.resource(apiVersion, plural).namespaced);
    if (!parsed) throw new Error(`not a resource path: ${path}`);
    return {
      resource: this.api.resource(parsed.apiVersion, parsed.plural),
      namespace: parsed.namespace,
      name: parsed.name as string,
      subresource: parsed.subresource,
    };
  }

  /** Runs an API call and turns the test server's errors into the ones KubeClient throws. */
  private call<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (error instanceof KubeError) throw new KubeApiError(error.code, error.reason, error.message);
      throw error;
    }
  }
}

/** Events as `Type Reason note` lines, in the order the reconciler recorded them. */
class RecordedEvents {
  readonly lines: string[] = [];

  record(_regarding: KubeObject, type: EventType, reason: string, _action: string, note: string): void {
    this.lines.push(`${type} ${reason} ${note}`);
  }
}

/** Loading kubernetes-models' validators takes most of a second: once per test worker. */
let servedTypes: Promise<ServedType[]> | undefined;
function loadServedTypes(): Promise<ServedType[]> {
  servedTypes ??= loadBuiltinValidators().then((validators) => [
    ...builtinResourceTypes(validators),
    ...loadCrdManifests().flatMap(crdResourceTypes),
  ]);
  return servedTypes;
}

/** prom-client's default metrics install observers per registry: one registry is enough for all cases. */
let metrics: Metrics | undefined;

export interface RecordingCluster {
  /** The caches as the informers would hold the seeded objects: writes show only after `sync()`. */
  caches: Caches;
  /** The informers catch up: the caches show what the API server holds now. */
  sync(): void;
  /** Every write sent so far, in order. */
  writes: RecordedWrite[];
  /** Every event recorded so far, as `Type Reason note`. */
  events: string[];
  /** What the API server holds now (seeded objects plus the writes). */
  get(type: ResourceType, namespace: string, name: string): KubeObject | undefined;
  /** A reconciler wired to this cluster. */
  reconciler(options?: { now?: Date; pollMs?: number; settings?: BuildSettings }): Reconciler;
}

/**
 * Seeds `objects` as they would be stored (metadata, status and resourceVersions kept; namespaces
 * created) and returns the client, the caches and the recorders a Reconciler needs.
 */
export async function recordingCluster(objects: readonly KubeObject[]): Promise<RecordingCluster> {
  const api = new KubeApi(new ResourceRegistry(await loadServedTypes()), new ObjectStore(1000));
  const typeOf = (obj: KubeObject) => api.resource(resourceTypeOf(obj).apiVersion, resourceTypeOf(obj).plural);
  const namespaces = new Set(objects.map((o) => o.metadata?.namespace).filter((ns) => ns !== undefined));
  for (const namespace of namespaces) {
    api.create(api.resource("v1", "namespaces"), undefined, { metadata: { name: namespace } });
  }
  for (const obj of objects) {
    const type = typeOf(obj);
    const seeded = structuredClone(obj) as StoredObject;
    seeded.metadata.uid ??= `uid-${obj.kind}-${obj.metadata?.name}`;
    if (type.tracksGeneration) seeded.metadata.generation ??= 1;
    // Defaulted as a create would have stored it: an update compared with an undefaulted object
    // would look like a change of immutable fields (a StatefulSet's revisionHistoryLimit).
    applyDefaults(type, seeded);
    api.store.write(type, "ADDED", seeded);
  }

  // The same kinds, label selector and trims as the informers startOperator starts (operator.ts).
  const ours = labelSelector(`${MANAGED_BY_LABEL}=${MANAGED_BY}`);
  const cached = <T extends KubeObject>(type: ResourceType, onlyOurs: boolean, trim: (obj: T) => T = (o) => o) =>
    snapshot(
      api.store
        .list(api.resource(type.apiVersion, type.plural))
        .filter((o) => !onlyOurs || ours(o))
        .map((o) => trim(structuredClone(o) as unknown as T)),
    );
  const list = (): Caches => ({
    agentDeployments: cached<AgentDeployment>(resources.agentDeployment, false),
    agentRevisions: cached<AgentRevision>(resources.agentRevision, false),
    deployments: cached(resources.deployment, true, trimDeployment),
    services: cached(resources.service, true, trimToStatus),
    statefulSets: cached(resources.statefulSet, true, trimStatefulSet),
    autoscalers: cached(resources.hpa, true, trimToStatus),
    networkPolicies: cached(resources.networkPolicy, true, trimToStatus),
    pods: cached(resources.pod, true, trimPod),
  });
  let current = list();
  const view = <K extends keyof Caches>(kind: K) =>
    ({
      get: (name: string, namespace?: string) => current[kind].get(name, namespace),
      list: (namespace?: string) => current[kind].list(namespace),
    }) as Caches[K];
  const caches: Caches = {
    agentDeployments: view("agentDeployments"),
    agentRevisions: view("agentRevisions"),
    deployments: view("deployments"),
    services: view("services"),
    statefulSets: view("statefulSets"),
    autoscalers: view("autoscalers"),
    networkPolicies: view("networkPolicies"),
    pods: view("pods"),
  };

  const kube = new RecordingKube(api);
  const events = new RecordedEvents();
  return {
    caches,
    sync: () => {
      current = list();
    },
    writes: kube.writes,
    events: events.lines,
    get: (type, namespace, name) => api.store.get(api.resource(type.apiVersion, type.plural), namespace, name),
    reconciler: (options = {}) => {
      metrics ??= createMetrics();
      const now = options.now ?? new Date("2026-01-01T00:01:00Z");
      return new Reconciler({
        kube,
        caches,
        settings: options.settings ?? defaultBuildSettings,
        events,
        metrics,
        log: pino({ level: "silent" }),
        now: () => now,
        pollMs: options.pollMs ?? 2000,
      });
    },
  };
}

function snapshot<T extends KubeObject>(objects: T[]): ObjectCache<T> {
  const key = (name: string, namespace: string | undefined) => `${namespace ?? ""}/${name}`;
  const byKey = new Map(objects.map((o) => [key(o.metadata?.name as string, o.metadata?.namespace), o]));
  return {
    get: (name, namespace) => byKey.get(key(name, namespace)),
    list: (namespace) => objects.filter((o) => namespace === undefined || o.metadata?.namespace === namespace),
  };
}
