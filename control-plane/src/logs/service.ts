import { HttpError, type Logger } from "@agentplane/common";
import { type AgentDeployment, LABEL_DEPLOYMENT_ID, LABEL_REVISION_ID, LABEL_TENANT_ID } from "@agentplane/crds";
import type { DeploymentService } from "../deployments/service.ts";
import type { KubeClients } from "../kube/client.ts";
import { kubeStatus } from "../kube/errors.ts";
import { toRevisionResponse } from "../revisions/mapping.ts";
import type { Revision } from "../revisions/schemas.ts";
import { BadCursor, failureEntry, type KeyedEntry, type LogFilter, matches, page, parsePodLog } from "./entries.ts";
import type { DeploymentLogsQuery, LogEntry, RevisionLogsQuery } from "./schemas.ts";

/** How the operator names and labels the agent-server container and its pods. */
const AGENT_CONTAINER = "agent-server";
const AGENT_COMPONENT = "app.kubernetes.io/component=agent-server";

interface LogRequest extends LogFilter {
  order: "asc" | "desc";
  limit: number;
  cursor: string | null | undefined;
  /** Where the cursor came from, for the 422. */
  cursorLoc: string;
}

/**
 * Deploy logs: the agent-server containers' output, read through the Kubernetes API (`pods/log`) from
 * the deployment's current pods (a deleted pod's log is gone, as with `kubectl logs`), preceded by
 * the failure reason of a DEPLOY_FAILED revision. Build logs are always empty: images are built elsewhere.
 */
export class LogService {
  private readonly kube: KubeClients;
  private readonly deployments: DeploymentService;
  private readonly logger: Logger;

  constructor(kube: KubeClients, deployments: DeploymentService, logger: Logger) {
    this.kube = kube;
    this.deployments = deployments;
    this.logger = logger;
  }

  async revisionLogs(
    tenantId: string,
    deploymentId: string,
    revisionId: string,
    query: RevisionLogsQuery,
  ): Promise<{ logs: LogEntry[]; next_offset: string | null }> {
    const deployment = await this.deployments.require(tenantId, deploymentId);
    const revision = await this.deployments.getRevision(tenantId, deploymentId, revisionId);
    const request = {
      ...filterOf(query),
      order: query.order,
      limit: query.limit,
      cursor: query.offset,
      cursorLoc: "offset",
    };
    if (query.type === "build") return { logs: [], next_offset: checkedEmpty(request) };
    const { entries, next } = await this.read(deployment, [revision], revisionId, request);
    return { logs: entries, next_offset: next };
  }

  async deploymentLogs(
    tenantId: string,
    query: DeploymentLogsQuery,
  ): Promise<{ items: LogEntry[]; next_cursor: string | null }> {
    const id = query.deployment_id;
    const deployment = await this.deployments.require(tenantId, id);
    const revisions = query.revision_id
      ? [await this.deployments.getRevision(tenantId, id, query.revision_id)]
      : (await this.deployments.listRevisions(tenantId, id, undefined)).map(toRevisionResponse);
    const request = {
      ...filterOf(query),
      order: query.sort_order,
      limit: query.page_size,
      cursor: query.cursor,
      cursorLoc: "cursor",
    };
    if (query.log_type === "BUILD") return { items: [], next_cursor: checkedEmpty(request) };
    const { entries, next } = await this.read(deployment, revisions, query.revision_id ?? undefined, request);
    return { items: entries, next_cursor: next };
  }

  private async read(
    deployment: AgentDeployment,
    revisions: Revision[],
    revisionId: string | undefined,
    request: LogRequest,
  ): Promise<{ entries: LogEntry[]; next: string | null }> {
    const namespace = deployment.metadata.namespace ?? "";
    const selector = [
      `${LABEL_TENANT_ID}=${deployment.spec.tenantId}`,
      `${LABEL_DEPLOYMENT_ID}=${deployment.metadata.name}`,
      AGENT_COMPONENT,
      ...(revisionId ? [`${LABEL_REVISION_ID}=${revisionId}`] : []),
    ].join(",");
    const pods = (await this.kube.core.listNamespacedPod({ namespace, labelSelector: selector })).items;
    // Kubernetes keeps whole seconds: ask from the second before the start, filter exactly below.
    const sinceSeconds =
      request.start === undefined ? undefined : Math.max(1, Math.ceil((Date.now() - request.start) / 1000) + 1);
    const logs = await Promise.all(
      pods.map(async (pod) => {
        const name = pod.metadata?.name ?? "";
        const text = await this.podLog(namespace, name, sinceSeconds);
        return parsePodLog({ pod: name, revisionId: pod.metadata?.labels?.[LABEL_REVISION_ID] ?? null, text });
      }),
    );
    const failures = revisions
      .filter((revision) => revision.status === "DEPLOY_FAILED" && revision.status_message)
      .map((revision) => failureEntry(revision.id, revision.status_message ?? "", revision.updated_at));
    const all: KeyedEntry[] = [...failures, ...logs.flat()].filter(matches(request));
    try {
      return page(all, request.order, request.limit, request.cursor);
    } catch (error) {
      if (error instanceof BadCursor) throw badCursor(request.cursorLoc);
      throw error;
    }
  }

  /** The container's log so far; empty while it has none to give (not started yet, or gone meanwhile). */
  private async podLog(namespace: string, name: string, sinceSeconds: number | undefined): Promise<string> {
    try {
      return await this.kube.core.readNamespacedPodLog({
        namespace,
        name,
        container: AGENT_CONTAINER,
        timestamps: true,
        ...(sinceSeconds === undefined ? {} : { sinceSeconds }),
      });
    } catch (error) {
      const status = kubeStatus(error);
      if (status === 400 || status === 404) {
        this.logger.debug({ namespace, pod: name, status }, "no log for pod yet");
        return "";
      }
      throw error;
    }
  }
}

function filterOf(query: {
  start_time?: string | null;
  end_time?: string | null;
  query?: string | null;
  level?: LogFilter["level"] | null;
  run_id?: string | null;
}): LogFilter {
  return {
    start: query.start_time ? Date.parse(query.start_time) : undefined,
    end: query.end_time ? Date.parse(query.end_time) : undefined,
    query: query.query || undefined,
    level: query.level ?? undefined,
    runId: query.run_id ?? undefined,
  };
}

const badCursor = (loc: string) =>
  new HttpError(422, [{ loc: ["query", loc], msg: "is not a cursor this API returned", type: "value_error" }]);

/** An empty log still refuses a cursor it never gave. */
function checkedEmpty(request: LogRequest): null {
  try {
    page([], request.order, request.limit, request.cursor);
  } catch (error) {
    if (error instanceof BadCursor) throw badCursor(request.cursorLoc);
    throw error;
  }
  return null;
}
