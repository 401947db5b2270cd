import { REVISION_STATUSES } from "@agentplane/crds";
import { z } from "zod";
import { pageQuery, Source, SourceRevisionConfig } from "../deployments/schemas.ts";
import { apiSchemas } from "../schemas/registry.ts";

export const RevisionStatus = z.enum(REVISION_STATUSES).register(apiSchemas, { id: "RevisionStatus" });

export const Revision = z
  .object({
    id: z.uuid(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    status: RevisionStatus,
    source: Source,
    source_revision_config: SourceRevisionConfig,
  })
  .register(apiSchemas, { id: "Revision" });
export type Revision = z.infer<typeof Revision>;

export const RevisionsList = z
  .object({ resources: z.array(Revision), offset: z.int() })
  .register(apiSchemas, { id: "RevisionsList" });

const statusList = z
  .string()
  .transform((value) => value.split(",").map((part) => part.trim()))
  .pipe(z.array(RevisionStatus));

export const RevisionListQuery = z.object({ ...pageQuery, status: statusList.nullish() });
export type RevisionListQuery = z.infer<typeof RevisionListQuery>;

export const RevisionPath = z.object({ deployment_id: z.uuid(), revision_id: z.uuid() });
