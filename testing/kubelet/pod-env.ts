import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeClient } from "../../operator/src/kube/client.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

/** The HTTP probes the test kubelet runs (exec and TCP probes are not emulated). */
export interface Probe {
  /** The port is the one the kubelet gave the process, whatever the probe names. */
  httpGet?: { path?: string; port?: number | string };
  periodSeconds?: number;
  failureThreshold?: number;
}

export interface ContainerSpec {
  name: string;
  image: string;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  env?: EnvVar[];
  envFrom?: { secretRef?: { name: string } }[];
  volumeMounts?: { name: string; mountPath: string }[];
}

export interface PodSpec {
  containers: ContainerSpec[];
  volumes?: { name: string; secret?: { secretName: string; items?: { key: string; path: string }[] } }[];
}

interface Secret {
  data?: Record<string, string>;
}

export class MissingSecretError extends Error {}

async function readSecret(kube: KubeClient, namespace: string, name: string): Promise<Record<string, string>> {
  const secret = await kube.get<Secret>(resourcePath(resources.secret, namespace, name));
  if (!secret) throw new MissingSecretError(`secret "${name}" not found`);
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
  );
}

/**
 * The kubelet's `$(VAR)` expansion of an env value: a variable defined earlier in the container's
 * env is substituted, `$$` escapes a `$`, and an unknown reference stays as written.
 */
export function expandVariableReferences(value: string, env: Record<string, string>): string {
  return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name: string | undefined) => {
    if (name === undefined) return "$";
    return env[name] ?? match;
  });
}

/**
 * What a kubelet does before starting a container: env from Secrets (`envFrom`, `secretKeyRef`)
 * and Secret volumes written to disk. Mount paths are rewritten to a temporary directory, and env
 * values pointing into a mount follow it, since a local process cannot write to `/etc/...`.
 */
export async function resolveContainerEnv(
  kube: KubeClient,
  namespace: string,
  pod: PodSpec,
  container: ContainerSpec,
): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.secretRef) Object.assign(env, await readSecret(kube, namespace, source.secretRef.name));
  }
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (ref) {
      const value = (await readSecret(kube, namespace, ref.name))[ref.key];
      if (value === undefined) throw new MissingSecretError(`key "${ref.key}" not in secret "${ref.name}"`);
      env[variable.name] = value;
    } else {
      env[variable.name] = expandVariableReferences(variable.value ?? "", env);
    }
  }
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    if (!volume?.secret) continue;
    const data = await readSecret(kube, namespace, volume.secret.secretName);
    const dir = mkdtempSync(join(tmpdir(), "kubelet-volume-"));
    const items = volume.secret.items ?? Object.keys(data).map((key) => ({ key, path: key }));
    for (const item of items) writeFileSync(join(dir, item.path), data[item.key] ?? "");
    for (const [name, value] of Object.entries(env)) {
      if (value.startsWith(`${mount.mountPath}/`)) env[name] = dir + value.slice(mount.mountPath.length);
    }
  }
  return env;
}
