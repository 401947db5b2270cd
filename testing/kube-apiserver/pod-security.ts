/**
 * The Pod Security Standards `baseline` and `restricted` profiles as a check over a pod (template),
 * written from the published profile, used by the test server's Pod Security admission and by tests:
 * https://kubernetes.io/docs/concepts/security/pod-security-standards/
 * Returns one line per violation (empty = the pod would be admitted at that level).
 */

type Json = Record<string, any>;

export interface PodTemplate {
  metadata?: { annotations?: Record<string, string> };
  spec: Json;
}

/** Restricted: every volume is one of these (no hostPath, nfs, iscsi, …). */
const ALLOWED_VOLUME_TYPES = new Set([
  "configMap",
  "csi",
  "downwardAPI",
  "emptyDir",
  "ephemeral",
  "persistentVolumeClaim",
  "projected",
  "secret",
]);

/** Baseline: the sysctls considered safe (namespaced and isolated from the node). */
const SAFE_SYSCTLS = new Set([
  "kernel.shm_rmid_forced",
  "net.ipv4.ip_local_port_range",
  "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.tcp_syncookies",
  "net.ipv4.ping_group_range",
  "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
]);

const ALLOWED_SELINUX_TYPES = new Set(["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"]);

const APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/";

function containersOf(spec: Json): { field: string; container: Json }[] {
  return (["initContainers", "containers", "ephemeralContainers"] as const).flatMap((list) =>
    (Array.isArray(spec[list]) ? spec[list] : []).map((container: Json, i: number) => ({
      field: `spec.${list}[${i}]`,
      container,
    })),
  );
}

/** Pod Security Standards levels (`pod-security.kubernetes.io/enforce` values). */
export type PodSecurityLevel = "privileged" | "baseline" | "restricted";

export function restrictedViolations(pod: PodTemplate): string[] {
  return podSecurityViolations(pod, "restricted");
}

/** Violations of `level` (each level includes the ones below it; `privileged` allows everything). */
export function podSecurityViolations(pod: PodTemplate, level: PodSecurityLevel): string[] {
  if (level === "privileged") return [];
  const found: string[] = [];
  const spec = pod.spec ?? {};
  const podSc: Json = spec.securityContext ?? {};
  const containers = containersOf(spec);

  // --- baseline ---
  for (const field of ["hostNetwork", "hostPID", "hostIPC"]) {
    if (spec[field] === true) found.push(`host namespaces: spec.${field} is true`);
  }
  if (podSc.windowsOptions?.hostProcess === true)
    found.push("HostProcess: spec.securityContext.windowsOptions.hostProcess");
  for (const { field, container } of containers) {
    const sc: Json = container.securityContext ?? {};
    if (sc.privileged === true) found.push(`privileged: ${field}.securityContext.privileged`);
    if (sc.windowsOptions?.hostProcess === true) found.push(`HostProcess: ${field}.securityContext.windowsOptions`);
    for (const [i, port] of (container.ports ?? []).entries()) {
      if (port?.hostPort) found.push(`host ports: ${field}.ports[${i}].hostPort`);
    }
    if (sc.procMount !== undefined && sc.procMount !== "Default")
      found.push(`/proc mount: ${field}.securityContext.procMount`);
  }
  for (const [i, volume] of (spec.volumes ?? []).entries()) {
    if (volume?.hostPath) found.push(`hostPath volumes: spec.volumes[${i}]`);
  }
  const appArmorOk = (type: unknown) => type === undefined || type === "RuntimeDefault" || type === "Localhost";
  if (!appArmorOk(podSc.appArmorProfile?.type)) found.push("AppArmor: spec.securityContext.appArmorProfile");
  for (const [key, value] of Object.entries(pod.metadata?.annotations ?? {})) {
    if (key.startsWith(APPARMOR_ANNOTATION) && value !== "runtime/default" && !value.startsWith("localhost/")) {
      found.push(`AppArmor: annotation ${key}=${value}`);
    }
  }
  const seLinuxOk = (options: Json | undefined) =>
    !options ||
    (ALLOWED_SELINUX_TYPES.has(options.type ?? "") && options.user === undefined && options.role === undefined);
  if (!seLinuxOk(podSc.seLinuxOptions)) found.push("SELinux: spec.securityContext.seLinuxOptions");
  for (const { field, container } of containers) {
    const sc: Json = container.securityContext ?? {};
    if (!appArmorOk(sc.appArmorProfile?.type)) found.push(`AppArmor: ${field}.securityContext.appArmorProfile`);
    if (!seLinuxOk(sc.seLinuxOptions)) found.push(`SELinux: ${field}.securityContext.seLinuxOptions`);
  }
  for (const sysctl of podSc.sysctls ?? []) {
    if (!SAFE_SYSCTLS.has(sysctl?.name)) found.push(`sysctls: ${sysctl?.name} is not a safe sysctl`);
  }

  if (level === "baseline") return found;

  // --- restricted ---
  for (const [i, volume] of (spec.volumes ?? []).entries()) {
    const types = Object.keys(volume ?? {}).filter((key) => key !== "name");
    for (const type of types) {
      if (!ALLOWED_VOLUME_TYPES.has(type)) found.push(`volume types: spec.volumes[${i}] is ${type}`);
    }
  }
  const podSeccomp = podSc.seccompProfile?.type;
  const seccompOk = (type: unknown) => type === "RuntimeDefault" || type === "Localhost";
  if (podSeccomp !== undefined && !seccompOk(podSeccomp)) found.push(`seccomp: spec.securityContext is ${podSeccomp}`);
  if (podSc.runAsUser === 0) found.push("non-root user: spec.securityContext.runAsUser is 0");
  for (const { field, container } of containers) {
    const sc: Json = container.securityContext ?? {};
    if (sc.allowPrivilegeEscalation !== false) {
      found.push(`privilege escalation: ${field}.securityContext.allowPrivilegeEscalation is not false`);
    }
    const nonRoot = sc.runAsNonRoot ?? podSc.runAsNonRoot;
    if (nonRoot !== true) found.push(`non-root: ${field} does not set runAsNonRoot (nor the pod)`);
    if (sc.runAsUser === 0) found.push(`non-root user: ${field}.securityContext.runAsUser is 0`);
    const seccomp = sc.seccompProfile?.type ?? podSeccomp;
    if (!seccompOk(seccomp)) found.push(`seccomp: ${field} is ${seccomp ?? "unset"} (RuntimeDefault or Localhost)`);
    const drop: unknown[] = sc.capabilities?.drop ?? [];
    if (!drop.includes("ALL")) found.push(`capabilities: ${field} does not drop ALL`);
    for (const capability of sc.capabilities?.add ?? []) {
      if (capability !== "NET_BIND_SERVICE") found.push(`capabilities: ${field} adds ${capability}`);
    }
  }
  return found;
}
