import { type ChildProcess, spawn } from "node:child_process";
import type { KubeClient } from "../../operator/src/kube/client.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";
import { freePort } from "../redis-server.ts";
import { podLogPath, timestampLines } from "./container-logs.ts";
import { type PodSpec, type Probe, resolveContainerEnv } from "./pod-env.ts";

/** How the test kubelet "runs" an image: a local command on `port`, or instantly ready (no process). */
export type ImageRun = { command: string; args: string[]; env?: Record<string, string> } | "simulated";
export type ImageTable = Record<string, (port: number) => ImageRun>;
/** Image name -> how to run it, for tables keyed by pattern (e.g. every tag of one repository). */
export type ImageResolver = (image: string) => ImageTable[string] | undefined;

export interface PodRef {
  namespace: string;
  name: string;
  spec: PodSpec;
}

export interface PodRunnerOptions {
  kube: KubeClient;
  images: ImageTable | ImageResolver;
  /** Env a kubelet-local shortcut forces on top of the pod's (e.g. REDIS_URI of the test Redis). */
  envOverrides: (pod: PodRef, env: Record<string, string>) => Record<string, string>;
  logDir: string;
  onChange: () => void;
}

type ContainerState =
  | { running: { startedAt: string } }
  | { waiting: { reason: string; message?: string } }
  | { terminated: { exitCode: number; reason: string } };

const CRASH_LOOP_AFTER = 2;

/**
 * One pod's container as a local process: resolves its env, starts it, restarts it with backoff when
 * it exits or fails its liveness probe (reporting CrashLoopBackOff like a kubelet), probes readiness
 * (the readiness probe's path, else `GET /ok`) and writes the Pod status.
 */
export class PodRunner {
  readonly pod: PodRef;
  port = 0;
  ready = false;
  private readonly options: PodRunnerOptions;
  private child: ChildProcess | undefined;
  private restarts = 0;
  private lastExit: number | undefined;
  private state: ContainerState = { waiting: { reason: "ContainerCreating" } };
  private stopped = false;
  private timers = new Set<NodeJS.Timeout>();
  private writing: Promise<void> = Promise.resolve();

  constructor(pod: PodRef, options: PodRunnerOptions) {
    this.pod = pod;
    this.options = options;
  }

  async start(): Promise<void> {
    const container = this.pod.spec.containers[0];
    if (!container) return;
    this.port = await freePort();
    const { images } = this.options;
    const image = typeof images === "function" ? images(container.image) : images[container.image];
    if (!image) {
      this.state = { waiting: { reason: "ImagePullBackOff", message: `Back-off pulling image "${container.image}"` } };
      return this.writeStatus();
    }
    const run = image(this.port);
    if (run === "simulated") {
      this.state = { running: { startedAt: new Date().toISOString() } };
      this.ready = true;
      return this.writeStatus();
    }
    let env: Record<string, string>;
    try {
      env = await resolveContainerEnv(this.options.kube, this.pod.namespace, this.pod.spec, container);
    } catch (error) {
      this.state = { waiting: { reason: "CreateContainerConfigError", message: (error as Error).message } };
      return this.writeStatus();
    }
    const launch = () => {
      if (this.stopped) return;
      const child = spawn(run.command, run.args, {
        env: {
          ...process.env,
          ...env,
          ...run.env,
          ...this.options.envOverrides(this.pod, env),
          PORT: String(this.port),
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const logFile = podLogPath(this.options.logDir, this.pod.name);
      for (const stream of [child.stdout, child.stderr]) if (stream) timestampLines(stream, logFile);
      this.child = child;
      this.state = { running: { startedAt: new Date().toISOString() } };
      void this.writeStatus();
      this.probe(child);
      child.once("exit", (code) => {
        if (this.child !== child || this.stopped) return;
        this.child = undefined;
        this.ready = false;
        this.restarts++;
        this.lastExit = code ?? 137;
        this.state =
          this.restarts >= CRASH_LOOP_AFTER
            ? { waiting: { reason: "CrashLoopBackOff", message: `back-off restarting failed container` } }
            : { terminated: { exitCode: this.lastExit, reason: "Error" } };
        void this.writeStatus();
        this.later(launch, Math.min(250 * 2 ** this.restarts, 5_000));
      });
    };
    launch();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(killer);
    }
    await this.writing;
  }

  private later(fn: () => void, ms: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  private async answers(path: string): Promise<boolean> {
    try {
      const response = await fetch(`http://127.0.0.1:${this.port}${path}`, { signal: AbortSignal.timeout(2_000) });
      return response.ok;
    } catch {
      return false;
    }
  }

  /**
   * The container's HTTP startup and liveness probes, as a kubelet runs them: liveness starts once the
   * startup probe passed, and either failing `failureThreshold` times in a row kills the container,
   * which is then restarted like one that exited.
   */
  private watchLiveness(child: ChildProcess): void {
    const container = this.pod.spec.containers[0];
    const startup = container?.startupProbe?.httpGet ? container.startupProbe : undefined;
    const liveness = container?.livenessProbe?.httpGet ? container.livenessProbe : undefined;
    const run = (probe: Probe | undefined, failures: number) => {
      if (!probe) return;
      this.later(
        async () => {
          if (this.stopped || this.child !== child) return;
          const ok = await this.answers(probe.httpGet?.path ?? "/");
          if (this.stopped || this.child !== child) return;
          // A passing startup probe hands over to liveness, which keeps probing.
          if (ok) run(probe === startup ? liveness : probe, 0);
          else if (failures + 1 >= (probe.failureThreshold ?? 3)) child.kill("SIGKILL");
          else run(probe, failures + 1);
        },
        (probe.periodSeconds ?? 10) * 1000,
      );
    };
    run(startup ?? liveness, 0);
  }

  private probe(child: ChildProcess): void {
    this.watchLiveness(child);
    const path = this.pod.spec.containers[0]?.readinessProbe?.httpGet?.path ?? "/ok";
    const check = async () => {
      if (this.stopped || this.child !== child) return;
      const ok = await this.answers(path);
      if (this.stopped || this.child !== child) return;
      if (ok !== this.ready) {
        this.ready = ok;
        void this.writeStatus();
      }
      this.later(() => void check(), ok ? 1_000 : 200);
    };
    void check();
  }

  private writeStatus(): Promise<void> {
    const container = this.pod.spec.containers[0];
    const now = new Date().toISOString();
    const condition = (type: string, ok: boolean) => ({ type, status: ok ? "True" : "False", lastTransitionTime: now });
    const status = {
      phase: "running" in this.state ? "Running" : "Pending",
      podIP: "127.0.0.1",
      hostIP: "127.0.0.1",
      conditions: [
        condition("PodScheduled", true),
        condition("ContainersReady", this.ready),
        condition("Ready", this.ready),
      ],
      containerStatuses: [
        {
          name: container?.name,
          image: container?.image,
          ready: this.ready,
          started: "running" in this.state,
          restartCount: this.restarts,
          state: this.state,
          ...(this.lastExit === undefined
            ? {}
            : { lastState: { terminated: { exitCode: this.lastExit, reason: "Error" } } }),
        },
      ],
    };
    const path = `${resourcePath(resources.pod, this.pod.namespace, this.pod.name)}/status`;
    this.writing = this.writing
      .then(() => this.options.kube.mergePatch(path, { status }, "test-kubelet"))
      .then(
        () => this.options.onChange(),
        () => this.options.onChange(),
      );
    return this.writing;
  }
}
