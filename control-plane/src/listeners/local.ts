import { createHash } from "node:crypto";

/** compute_id of the listener that stands for the cluster the control plane itself deploys into. */
export const LOCAL_COMPUTE_ID = "local";

/**
 * The id of a workspace's local listener: derived from the workspace, so every replica and every
 * restart gives the same one without storing it (UUID version 8, the layout for custom ids).
 */
export function localListenerId(tenantId: string): string {
  const hex = createHash("sha256").update(`agentplane/local-listener/${tenantId}`).digest("hex");
  const variant = ((Number.parseInt(hex[16] ?? "0", 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
