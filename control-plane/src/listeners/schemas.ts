import { z } from "zod";
import { dnsLabel } from "../deployments/pod-policy.ts";
import { pageQuery } from "../deployments/schemas.ts";
import { apiSchemas } from "../schemas/registry.ts";

export const ComputeType = z.literal("k8s").register(apiSchemas, { id: "ComputeType" });

export const ListenerComputeConfig = z
  .object({
    /** The namespaces the listener may deploy into. */
    k8s_namespaces: z
      .array(dnsLabel)
      .max(100)
      .refine((list) => new Set(list).size === list.length, "namespaces must be unique")
      .nullish(),
  })
  .register(apiSchemas, { id: "ListenerComputeConfig" });

/** User-chosen, e.g. the cluster's name: printable, no whitespace, unique per workspace. */
const computeId = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without whitespace");

const version = z.string().min(1).max(128).nullish();

export const ListenerCreateRequest = z
  .object({
    compute_type: ComputeType,
    compute_id: computeId,
    compute_config: ListenerComputeConfig,
    version,
  })
  .register(apiSchemas, { id: "ListenerCreateRequest" });
export type ListenerCreateRequest = z.infer<typeof ListenerCreateRequest>;

export const ListenerPatchRequest = z
  .object({ version, compute_config: ListenerComputeConfig.nullish() })
  .register(apiSchemas, { id: "ListenerPatchRequest" });
export type ListenerPatchRequest = z.infer<typeof ListenerPatchRequest>;

export const Listener = z
  .object({
    id: z.uuid(),
    compute_type: ComputeType,
    compute_id: z.string(),
    compute_config: z.object({ k8s_namespaces: z.array(z.string()).nullable() }),
    version: z.string().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .register(apiSchemas, { id: "Listener" });
export type Listener = z.infer<typeof Listener>;

export const ListenersList = z
  .object({ resources: z.array(Listener), offset: z.int() })
  .register(apiSchemas, { id: "ListenersList" });

export const ListenerListQuery = z.object(pageQuery);
export const ListenerPath = z.object({ listener_id: z.uuid() });
