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
    /**
     * Why the revision is where it is: the failure of a DEPLOY_FAILED revision, the revision that
     * superseded a SKIPPED or INTERRUPTED one; null otherwise. Named as on LangSmith's v1 revisions
     * (the v2 schema has no such field; its clients read the reason from the deploy logs, which carry it too).
     */
    status_message: z.string().nullable(),
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

export const RevisionListQuery = z.object({
  ...pageQuery,
  status: statusList.nullish(),
  remote_reconciled: z.stringbool().nullish(),
});
export type RevisionListQuery = z.infer<typeof RevisionListQuery>;

export const RevisionPath = z.object({ deployment_id: z.uuid(), revision_id: z.uuid() });
