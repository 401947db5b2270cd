import type { AgentDeployment } from "@agentplane/crds";
import { nameOf } from "../build/names.ts";
import type { KubeObject } from "../kube/client.ts";

export interface Write {
  hash: string;
  /** resourceVersion the cache showed when we wrote (undefined: the object did not exist). */
  basedOn: string | undefined;
  at: number;
}

/** A child the API server refused as written (its intent hash and the server's message). */
export interface Rejection {
  hash: string;
  message: string;
}

const CACHE_LAG_MS = 5_000;

/** What the reconciler remembers between reconciles of each AgentDeployment (key `namespace/name`). */
export class WriteMemo {
  /**
   * Per AgentDeployment key: what we last wrote to each child or status, while the informer cache
   * may not show it yet (same resourceVersion as before the write, for a few seconds). Writing it
   * again from a stale cache would only bump resourceVersions and wake everyone up.
   */
  private readonly written = new Map<string, Map<string, Write>>();
  /**
   * Per AgentDeployment key: children the API server refused, by `Kind/name`. Not sent again until
   * their intent changes (or the live object goes away), so a refusal is reported once, not per reconcile.
   */
  private readonly rejected = new Map<string, Map<string, Rejection>>();

  /** The writes to `agd`'s children (`Kind/name`) and statuses (`Kind/name/status`). */
  writes(agd: AgentDeployment): Map<string, Write> {
    return getOrCreate(this.written, keyOf(agd));
  }

  /** The children of `agd` the API server refused, by `Kind/name`. */
  rejections(agd: AgentDeployment): Map<string, Rejection> {
    return getOrCreate(this.rejected, keyOf(agd));
  }

  /** The AgentDeployment is gone or being deleted: nothing of it is kept. */
  forgetDeployment(deploymentKey: string): void {
    this.written.delete(deploymentKey);
    this.rejected.delete(deploymentKey);
  }

  /** The informer saw `kind/name` deleted: whatever we wrote to it is gone. */
  forgetChild(deploymentKey: string, kind: string, name: string): void {
    this.written.get(deploymentKey)?.delete(`${kind}/${name}`);
    this.rejected.get(deploymentKey)?.delete(`${kind}/${name}`);
  }
}

/** True when we already wrote `hash` and the cache has not moved since (it is just behind). */
export function stillPending(write: Write | undefined, hash: string, cached: KubeObject | undefined): boolean {
  return (
    write !== undefined &&
    write.hash === hash &&
    write.basedOn === cached?.metadata?.resourceVersion &&
    Date.now() - write.at < CACHE_LAG_MS
  );
}

function keyOf(agd: AgentDeployment): string {
  return `${agd.metadata.namespace}/${nameOf(agd)}`;
}

function getOrCreate<V>(maps: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let map = maps.get(key);
  if (!map) {
    map = new Map();
    maps.set(key, map);
  }
  return map;
}
