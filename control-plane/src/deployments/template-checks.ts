import { HttpError, toValidationIssues, type ValidationIssue } from "@agentplane/common";
import { isReservedEnvName, type RevisionTemplate, sharedWithWorkspace } from "@agentplane/crds";
import { fromResources } from "./mapping.ts";
import { notSharedIssue, referencedObjects } from "./pod-references.ts";
import { ResourceSpec, type Secret } from "./schemas.ts";
import type { DeploymentStore } from "./store.ts";

/** The checks a revision template passes before anything is written (each refusal a 422 naming its field). */

type ReferenceLookup = Pick<DeploymentStore, "referencedAnnotations">;

/**
 * Refuses (422, naming each field) a template that refers to a Secret, ConfigMap or ServiceAccount
 * an administrator has not shared with the workspace. Absent objects are refused alike, so that the
 * answer tells nothing about other tenants' objects.
 */
export async function checkReferences(
  store: ReferenceLookup,
  tenantId: string,
  namespace: string,
  template: RevisionTemplate,
): Promise<void> {
  const refs = referencedObjects(template.resources, template.secretReferences);
  const lookups = new Map<string, Promise<boolean>>();
  const shared = (kind: string, name: string, read: () => Promise<Record<string, string> | undefined>) => {
    const key = `${kind}/${name}`;
    let lookup = lookups.get(key);
    if (!lookup) {
      lookup = read().then((annotations) => sharedWithWorkspace(annotations, tenantId));
      lookups.set(key, lookup);
    }
    return lookup;
  };
  const verdicts = await Promise.all(
    refs.map((ref) => shared(ref.kind, ref.name, () => store.referencedAnnotations(ref.kind, namespace, ref.name))),
  );
  const issues = refs.filter((_, index) => !verdicts[index]).map(notSharedIssue);
  if (issues.length > 0) throw new HttpError(422, issues);
}

/**
 * The whole template a new revision would run, checked again: what a PATCH leaves unchanged was
 * accepted by an older version of these rules (or written around the API), and carrying it into a
 * new revision is refused just like sending it.
 */
export async function checkTemplate(
  store: ReferenceLookup,
  tenantId: string,
  namespace: string,
  template: RevisionTemplate,
  secrets: Secret[],
): Promise<void> {
  const issues: ValidationIssue[] = [];
  const resourceSpec = fromResources(template.resources);
  const parsed = ResourceSpec.safeParse(resourceSpec ?? {});
  if (!parsed.success) {
    issues.push(
      ...toValidationIssues(parsed.error, "body", resourceSpec).map((issue) => ({
        ...issue,
        loc: ["body", "source_config", "resource_spec", ...issue.loc.slice(1)],
      })),
    );
  }
  secrets.forEach((secret, index) => {
    if (isReservedEnvName(secret.name)) {
      issues.push({
        loc: ["body", "secrets", index, "name"],
        msg: "is reserved for the platform",
        type: "value_error",
      });
    }
  });
  (template.secretReferences ?? []).forEach((ref, index) => {
    if (isReservedEnvName(ref.name)) {
      issues.push({
        loc: ["body", "secret_references", index, "name"],
        msg: "is reserved for the platform",
        type: "value_error",
      });
    }
  });
  if (issues.length > 0) throw new HttpError(422, issues);
  await checkReferences(store, tenantId, namespace, template);
}
