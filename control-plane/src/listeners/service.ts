import { randomUUID } from "node:crypto";
import { badRequest, HttpError, notFound } from "@agentplane/common";
import type { NamespacePlacement } from "../deployments/namespaces.ts";
import { retryOnConflict } from "../kube/errors.ts";
import { LOCAL_COMPUTE_ID, localListenerId } from "./local.ts";
import type { Listener, ListenerCreateRequest, ListenerPatchRequest } from "./schemas.ts";
import { computeIdTaken, type ListenerStore } from "./store.ts";

const listenerNotFound = (id: string) => notFound(`Listener ID ${id} not found.`);

/**
 * Listeners of a workspace: the local one, which describes the cluster this control plane writes to
 * and the namespaces the workspace may use there (from the control plane's configuration, so it can
 * be neither changed nor deleted through the API), and those registered through the API for other
 * clusters. Only the local listener runs deployments: this control plane has no remote listener
 * that would reconcile the others.
 */
export class ListenerService {
  private readonly store: ListenerStore;
  private readonly placement: NamespacePlacement;
  /** The local listener is not stored: its timestamps are those of the control plane's start. */
  private readonly startedAt = new Date().toISOString();

  constructor(store: ListenerStore, placement: NamespacePlacement) {
    this.store = store;
    this.placement = placement;
  }

  local(tenantId: string): Listener {
    return {
      id: localListenerId(tenantId),
      compute_type: "k8s",
      compute_id: LOCAL_COMPUTE_ID,
      compute_config: { k8s_namespaces: this.placement.of(tenantId) },
      version: null,
      created_at: this.startedAt,
      updated_at: this.startedAt,
    };
  }

  /** The local listener first, then registered ones, oldest first. */
  async list(tenantId: string): Promise<Listener[]> {
    const stored = (await this.store.list(tenantId)).sort(
      (a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id),
    );
    return [this.local(tenantId), ...stored];
  }

  async get(tenantId: string, id: string): Promise<Listener> {
    if (id === localListenerId(tenantId)) return this.local(tenantId);
    const found = await this.store.find(tenantId, id);
    if (!found) throw listenerNotFound(id);
    return found.listener;
  }

  async create(tenantId: string, request: ListenerCreateRequest): Promise<Listener> {
    if (request.compute_id === LOCAL_COMPUTE_ID) throw computeIdTaken(tenantId, request.compute_id);
    const now = new Date().toISOString();
    const listener: Listener = {
      id: randomUUID(),
      compute_type: request.compute_type,
      compute_id: request.compute_id,
      compute_config: { k8s_namespaces: request.compute_config.k8s_namespaces ?? null },
      version: request.version ?? null,
      created_at: now,
      updated_at: now,
    };
    await this.store.create(tenantId, listener);
    return listener;
  }

  /** Fields sent as null (or left out) keep their value, as on deployments. */
  async patch(tenantId: string, id: string, request: ListenerPatchRequest): Promise<Listener> {
    this.refuseLocal(tenantId, id);
    return retryOnConflict(async () => {
      const found = await this.store.find(tenantId, id);
      if (!found) throw listenerNotFound(id);
      const { listener } = found;
      const namespaces = request.compute_config?.k8s_namespaces;
      const updated: Listener = {
        ...listener,
        version: request.version ?? listener.version,
        compute_config: namespaces == null ? listener.compute_config : { k8s_namespaces: namespaces },
        updated_at: new Date().toISOString(),
      };
      await this.store.replace(found.configMap, updated);
      return updated;
    });
  }

  async delete(tenantId: string, id: string): Promise<void> {
    this.refuseLocal(tenantId, id);
    const found = await this.store.find(tenantId, id);
    if (!found || !(await this.store.delete(found.configMap))) throw listenerNotFound(id);
  }

  /**
   * The listener a new deployment binds to: the one named by `source_config.listener_id`, else the
   * local one. A listener of another workspace is as unknown as a missing one (422); a registered
   * listener of another cluster is refused (400), since nothing here would roll the deployment out.
   */
  async forDeployment(tenantId: string, listenerId: string | null | undefined): Promise<string> {
    const local = localListenerId(tenantId);
    if (listenerId == null || listenerId === local) return local;
    const found = await this.store.find(tenantId, listenerId);
    if (!found) {
      throw new HttpError(422, [
        {
          loc: ["body", "source_config", "listener_id"],
          msg: `Listener ID ${listenerId} not found.`,
          type: "value_error",
        },
      ]);
    }
    throw badRequest(
      `Listener ID ${listenerId} (compute ID '${found.listener.compute_id}') has no listener reconciling it: this control plane deploys through its local listener ${local} only.`,
    );
  }

  private refuseLocal(tenantId: string, id: string): void {
    if (id === localListenerId(tenantId)) {
      throw badRequest(
        `Listener ID ${id} describes the local cluster: it follows the control plane's configuration and cannot be changed or deleted.`,
      );
    }
  }
}
