import type { Logger } from "pino";
import { isConflict, isNotFound, type KubeClient } from "../kube/client.ts";
import { resourcePath, resources } from "../kube/resources.ts";

export interface LeaderElectionOptions {
  kube: KubeClient;
  namespace: string;
  leaseName: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  log: Logger;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
}

interface Lease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** MicroTime: the API server parses exactly six fractional digits (`Date#toISOString` has three). */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/**
 * client-go's Lease algorithm: acquire when the lease is free, ours, or has not changed for a full
 * lease duration as measured on our own clock (not by trusting the holder's renewTime); renew every
 * retry period; stop leading when renewal fails for longer than the renew deadline.
 */
export class LeaderElector {
  private readonly options: LeaderElectionOptions;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** The round under way, so stop() can wait for it instead of racing its renewal. */
  private round: Promise<void> = Promise.resolve();
  /** Whether the last round left the lease in our name, even if a stop kept it from counting. */
  private holdsLease = false;
  private observed: { record: string; at: number } | undefined;
  private lastRenewal = 0;

  constructor(options: LeaderElectionOptions) {
    this.options = options;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Time since the last successful renewal, for the liveness check. */
  get msSinceRenewal(): number {
    return this.leading ? Date.now() - this.lastRenewal : 0;
  }

  start(): void {
    this.stopped = false;
    this.runRound();
  }

  /**
   * Stops campaigning; releases the lease so a successor need not wait it out. It waits for a round
   * in flight first: that round's renewal would otherwise make the release a conflict, leaving a
   * successor to wait out the whole lease.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.round;
    if (this.leading) this.setLeading(false);
    if (!this.holdsLease) return;
    this.holdsLease = false;
    try {
      const lease = await this.options.kube.get<Lease>(this.path());
      if (lease?.spec?.holderIdentity === this.options.identity) {
        await this.options.kube.request("PUT", this.path(), {
          body: { ...lease, spec: { ...lease.spec, holderIdentity: "", renewTime: microTime(new Date()) } },
        });
      }
    } catch (error) {
      this.options.log.warn({ err: error }, "could not release the leader lease");
    }
  }

  private path(name?: string): string {
    return resourcePath(resources.lease, this.options.namespace, name ?? this.options.leaseName);
  }

  private runRound(): void {
    this.round = this.tick();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      const acquired = await this.tryAcquireOrRenew();
      this.holdsLease = acquired;
      if (this.stopped) return;
      if (acquired) this.lastRenewal = Date.now();
      if (acquired !== this.leading) {
        if (acquired || Date.now() - this.lastRenewal > this.options.renewDeadlineMs) this.setLeading(acquired);
      }
    } catch (error) {
      this.options.log.warn({ err: error }, "leader election round failed");
      if (this.leading && Date.now() - this.lastRenewal > this.options.renewDeadlineMs) this.setLeading(false);
    }
    if (this.stopped) return;
    const jitter = 1 + Math.random() * 0.2;
    this.timer = setTimeout(() => this.runRound(), this.options.retryPeriodMs * jitter);
    this.timer.unref();
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    this.options.log.info({ identity: this.options.identity, leading }, leading ? "became leader" : "stopped leading");
    if (leading) this.options.onStartedLeading();
    else this.options.onStoppedLeading();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { kube, identity, namespace, leaseName, leaseDurationMs } = this.options;
    const now = new Date();
    const lease = await kube.get<Lease>(this.path());
    const spec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    if (!lease) {
      try {
        await kube.create(resourcePath(resources.lease, namespace), {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name: leaseName, namespace },
          spec,
        });
        return true;
      } catch (error) {
        if (isConflict(error)) return false;
        throw error;
      }
    }
    const record = JSON.stringify(lease.spec ?? {});
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    const holder = lease.spec?.holderIdentity;
    const held = Boolean(holder) && holder !== identity;
    if (held && Date.now() - this.observed.at < leaseDurationMs) return false;
    const renewing = holder === identity;
    const next = {
      ...lease,
      spec: {
        ...spec,
        acquireTime: renewing ? (lease.spec?.acquireTime ?? spec.acquireTime) : spec.acquireTime,
        leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + (renewing ? 0 : 1),
      },
    };
    try {
      await kube.request("PUT", this.path(), { body: next });
      this.observed = { record: JSON.stringify(next.spec), at: Date.now() };
      return true;
    } catch (error) {
      if (isConflict(error) || isNotFound(error)) return false;
      throw error;
    }
  }
}
