import type { Logger } from "pino";
import { KubeApiError, type KubeClient, type KubeObject } from "../kube/client.ts";

export interface ObjectCache<T> {
  get(name: string, namespace?: string): T | undefined;
  list(namespace?: string): T[];
}

export interface InformerOptions<T extends KubeObject> {
  kube: KubeClient;
  /** Collection path, e.g. `/apis/apps/v1/deployments` (all namespaces) or a namespaced one. */
  path: string;
  labelSelector?: string;
  /** Called after the cache changed for this object (added, updated or deleted). */
  onEvent: (obj: T, deleted: boolean) => void;
  /** Trims an object before it enters the cache (like controller-runtime's TransformFunc). */
  transform?: (obj: T) => T;
  log: Logger;
  backoff: { baseMs: number; maxMs: number };
  /** How long the server keeps one watch open before we resume it (default 300 s). */
  watchTimeoutSeconds?: number;
}

export interface Informer<T> {
  cache: ObjectCache<T>;
  /** Resolves after the first successful list (the cache is primed). */
  synced: Promise<void>;
  stop(): Promise<void>;
}

interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: KubeObject & { code?: number };
}

/** Objects by namespace, then name. */
class Store<T extends KubeObject> implements ObjectCache<T> {
  private readonly byNamespace = new Map<string, Map<string, T>>();

  get(name: string, namespace?: string): T | undefined {
    return this.byNamespace.get(namespace ?? "")?.get(name);
  }

  list(namespace?: string): T[] {
    if (namespace !== undefined) return [...(this.byNamespace.get(namespace)?.values() ?? [])];
    return [...this.byNamespace.values()].flatMap((objects) => [...objects.values()]);
  }

  set(obj: T): void {
    const namespace = obj.metadata?.namespace ?? "";
    let objects = this.byNamespace.get(namespace);
    if (!objects) {
      objects = new Map();
      this.byNamespace.set(namespace, objects);
    }
    objects.set(obj.metadata?.name as string, obj);
  }

  delete(obj: KubeObject): void {
    this.byNamespace.get(obj.metadata?.namespace ?? "")?.delete(obj.metadata?.name as string);
  }
}

/** managedFields can be as large as the object and the operator never reads them. */
function withoutManagedFields<T extends KubeObject>(obj: T): T {
  if (!obj.metadata || !("managedFields" in obj.metadata)) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata as T["metadata"] & { managedFields?: unknown };
  return { ...obj, metadata };
}

const WATCH_TIMEOUT_SECONDS = 300;

/**
 * List, then watch from the list's resourceVersion, into a cache; forever. A watch that ends is
 * resumed from the last resourceVersion seen (bookmarks keep it fresh); 410 Gone relists (objects
 * missing from the new list are reported deleted); any other error retries with exponential backoff.
 */
export function startInformer<T extends KubeObject>(options: InformerOptions<T>): Informer<T> {
  const { kube, path, labelSelector, log } = options;
  const store = new Store<T>();
  const abort = new AbortController();
  let resourceVersion: string | undefined;
  let failures = 0;
  let markSynced: () => void = () => {};
  const synced = new Promise<void>((resolve) => {
    markSynced = resolve;
  });
  const prepare = (obj: T) =>
    options.transform ? options.transform(withoutManagedFields(obj)) : withoutManagedFields(obj);

  async function relist(): Promise<void> {
    const list = await kube.list<T>(path, labelSelector);
    const seen = new Set<string>();
    for (const raw of list.items) {
      const obj = prepare(raw);
      seen.add(`${obj.metadata?.namespace}/${obj.metadata?.name}`);
      const old = store.get(obj.metadata?.name as string, obj.metadata?.namespace);
      store.set(obj);
      if (old?.metadata?.resourceVersion !== obj.metadata?.resourceVersion) options.onEvent(obj, false);
    }
    for (const old of store.list()) {
      if (seen.has(`${old.metadata?.namespace}/${old.metadata?.name}`)) continue;
      store.delete(old);
      options.onEvent(old, true);
    }
    resourceVersion = list.metadata.resourceVersion;
    markSynced();
  }

  function apply(event: WatchEvent): void {
    if (event.type === "ERROR") {
      const code = event.object.code ?? 500;
      throw new KubeApiError(code, code === 410 ? "Expired" : "WatchError", "watch error event");
    }
    resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
    if (event.type === "BOOKMARK") return;
    if (event.type === "DELETED") {
      store.delete(event.object);
      options.onEvent(prepare(event.object as T), true);
      return;
    }
    const obj = prepare(event.object as T);
    store.set(obj);
    options.onEvent(obj, false);
  }

  async function watch(): Promise<void> {
    const response = await kube.send("GET", path, {
      query: {
        watch: true,
        resourceVersion,
        labelSelector,
        allowWatchBookmarks: true,
        timeoutSeconds: options.watchTimeoutSeconds ?? WATCH_TIMEOUT_SECONDS,
      },
      signal: abort.signal,
    });
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      const lines = (buffered + decoder.decode(chunk, { stream: true })).split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        if (line.trim()) apply(JSON.parse(line) as WatchEvent);
        failures = 0;
      }
    }
  }

  async function run(): Promise<void> {
    while (!abort.signal.aborted) {
      try {
        if (resourceVersion === undefined) await relist();
        await watch();
      } catch (error) {
        if (abort.signal.aborted) return;
        if (error instanceof KubeApiError && error.code === 410) {
          resourceVersion = undefined;
          continue;
        }
        const delay = Math.min(options.backoff.baseMs * 2 ** failures, options.backoff.maxMs);
        failures++;
        log.warn({ path, err: error, retryInMs: delay }, "list/watch failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
      }
    }
  }

  const running = run();
  return {
    cache: store,
    synced,
    stop: async () => {
      abort.abort();
      await running;
    },
  };
}
