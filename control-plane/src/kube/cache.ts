import type { Logger } from "@agentplane/common";
import { type Informer, type KubeConfig, makeInformer, type ObjectCache } from "@kubernetes/client-node";

/** What the cache needs of an object; both custom resources (plain JSON) and core objects fit. */
export interface Watched {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** Settled once the watch shows this resourceVersion (or, for a delete, the object gone). */
interface PendingWrite {
  resourceVersion: string | undefined;
  deleted: boolean;
  done: Promise<void>;
  settle: () => void;
}

function pendingWrite(resourceVersion: string | undefined, deleted: boolean): PendingWrite {
  let settle = () => {};
  const done = new Promise<void>((resolve) => {
    settle = resolve;
  });
  return { resourceVersion, deleted, done, settle };
}

const RESTART_DELAY_MS = 1_000;

/** The informer key of a cluster-wide watch (no namespace is named ""). */
const ALL = "";

/** The namespaces to watch, or all of them. */
export type WatchScope = readonly string[] | "all";

/**
 * One kind of object in some namespaces (or all), kept current by list+watch (client-node informers), so reads
 * do not cost a round trip. Writes made by this process are registered; `fresh()` waits until the
 * watch has delivered them, which gives read-your-writes. Until the first list has completed (or
 * after a watch failure, until it recovers) the cache reports itself stale and callers read directly.
 */
export class WatchedCollection<T extends Watched> {
  private readonly informers = new Map<string, Informer<T> & ObjectCache<T>>();
  private readonly synced = new Set<string>();
  private readonly failed = new Set<string>();
  private readonly pending = new Map<string, PendingWrite>();
  private readonly logger: Logger;
  private stopped = false;

  constructor(
    config: KubeConfig,
    scope: WatchScope,
    source: {
      path: (namespace: string | undefined) => string;
      list: (namespace: string | undefined) => Promise<{ items: T[] }>;
    },
    labelSelector: string,
    logger: Logger,
  ) {
    this.logger = logger;
    // One informer per namespace, or a single cluster-wide one (keyed ALL) when namespaces come and go.
    for (const key of scope === "all" ? [ALL] : scope) {
      const namespace = key === ALL ? undefined : key;
      // client-node types informers over its own object model; the objects are plain JSON either way.
      const informer = makeInformer(
        config,
        source.path(namespace),
        () => source.list(namespace) as never,
        labelSelector,
      ) as unknown as Informer<T> & ObjectCache<T>;
      const seen = (object: T) => this.seen(object, false);
      informer.on("add", seen);
      informer.on("update", seen);
      informer.on("delete", (object) => this.seen(object, true));
      informer.on("error", (error) => this.fail(key, informer, error));
      this.informers.set(key, informer);
    }
  }

  private informerFor(namespace: string): (Informer<T> & ObjectCache<T>) | undefined {
    return this.informers.get(namespace) ?? this.informers.get(ALL);
  }

  /** Starts watching in the background; reads fall back to direct API calls until the first list is in. */
  start(): void {
    for (const [namespace, informer] of this.informers) void this.run(namespace, informer);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.informers.values()].map((informer) => informer.stop()));
  }

  /** `start()` resolves after the initial list even when it failed (that is reported through "error"). */
  private async run(namespace: string, informer: Informer<T>): Promise<void> {
    this.failed.delete(namespace);
    try {
      await informer.start();
    } catch (error) {
      this.fail(namespace, informer, error);
    }
    if (!this.failed.has(namespace) && !this.stopped) this.synced.add(namespace);
  }

  private fail(namespace: string, informer: Informer<T>, error: unknown): void {
    this.synced.delete(namespace);
    if (this.stopped || this.failed.has(namespace)) return;
    this.failed.add(namespace);
    this.logger.warn({ err: error, namespace }, "watch failed; reading directly until it is restored");
    setTimeout(() => {
      if (!this.stopped) void this.run(namespace, informer);
    }, RESTART_DELAY_MS).unref();
  }

  private seen(object: T, deleted: boolean): void {
    const key = keyOf(object.metadata?.namespace, object.metadata?.name);
    const write = this.pending.get(key);
    if (!write) return;
    if ((deleted && write.deleted) || write.resourceVersion === object.metadata?.resourceVersion) {
      this.pending.delete(key);
      write.settle();
    }
  }

  /** Registers the object a write of ours returned (a delete: `deleted`), for read-your-writes. */
  written(object: T | undefined, deleted = false): void {
    const namespace = object?.metadata?.namespace;
    const name = object?.metadata?.name;
    const informer = namespace ? this.informerFor(namespace) : undefined;
    if (!namespace || !name || !informer) return;
    const cached = informer.get(name, namespace);
    const resourceVersion = object.metadata?.resourceVersion;
    if (cached?.metadata?.resourceVersion === resourceVersion || (deleted && !cached)) return;
    const key = keyOf(namespace, name);
    // A newer write of the same object supersedes the older one: only the newer state matters.
    this.pending.get(key)?.settle();
    this.pending.set(key, pendingWrite(resourceVersion, deleted));
  }

  /**
   * True when the cache holds everything this process wrote, waiting up to `timeoutMs` for the watch
   * to catch up; false means "read from the API server".
   */
  async fresh(timeoutMs = 1_000): Promise<boolean> {
    if (this.synced.size < this.informers.size) return false;
    const waiting = [...this.pending.values()];
    if (waiting.length === 0) return true;
    const allSettled = Promise.all(waiting.map((write) => write.done)).then(() => true);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const result = await Promise.race([allSettled, timeout]);
    clearTimeout(timer);
    if (!result) {
      // The watch is lagging or missed an event; give up on these writes rather than wait again.
      for (const [key, write] of this.pending) {
        if (waiting.includes(write)) {
          this.pending.delete(key);
          write.settle();
        }
      }
    }
    return result && this.synced.size === this.informers.size;
  }

  list(namespace: string): readonly T[] {
    return this.informerFor(namespace)?.list(namespace) ?? [];
  }

  get(namespace: string, name: string): T | undefined {
    return this.informerFor(namespace)?.get(name, namespace);
  }
}

const keyOf = (namespace: string | undefined, name: string | undefined) => `${namespace}/${name}`;
