import { createHash, randomUUID } from "node:crypto";
import { conflict, notFound } from "@agentplane/common";
import { GROUP } from "@agentplane/crds";
import type { V1ConfigMap, V1Secret } from "@kubernetes/client-node";
import type { KubeClients } from "../kube/client.ts";
import { isAlreadyExists, orUndefined, retryOnConflict } from "../kube/errors.ts";
import type { OAuthProviderCreateRequest, OAuthProviderResponse, OAuthProviderUpdateRequest } from "./schemas.ts";

export const LABEL_ORGANIZATION_ID = `${GROUP}/organization-id`;
export const LABEL_OAUTH_PROVIDER = `${GROUP}/oauth-provider`;
const RECORD_KEY = "provider.json";
const SECRET_KEY = "client_secret";

/** One ConfigMap (the record) + one Secret (client_secret) per provider; the name makes provider_id unique per org. */
export function providerObjectName(organizationId: string, providerId: string): string {
  return `oauth-provider-${createHash("sha256").update(`${organizationId}/${providerId}`).digest("hex").slice(0, 40)}`;
}

const providerNotFound = (providerId: string) => notFound(`OAuth provider '${providerId}' not found.`);

/** OAuth providers stored in the cluster, organization-scoped. */
export class ProviderStore {
  private readonly kube: KubeClients;
  private readonly namespace: string;

  constructor(kube: KubeClients, namespace: string) {
    this.kube = kube;
    this.namespace = namespace;
  }

  async list(organizationId: string): Promise<OAuthProviderResponse[]> {
    const list = await this.kube.core.listNamespacedConfigMap({
      namespace: this.namespace,
      labelSelector: `${LABEL_OAUTH_PROVIDER}=true,${LABEL_ORGANIZATION_ID}=${organizationId}`,
    });
    return list.items
      .map(recordOf)
      .filter((record) => record !== undefined)
      .sort((a, b) => a.created_at.localeCompare(b.created_at));
  }

  async get(organizationId: string, providerId: string): Promise<OAuthProviderResponse> {
    const configMap = await this.readConfigMap(organizationId, providerId);
    const record = configMap && recordOf(configMap);
    if (!record) throw providerNotFound(providerId);
    return record;
  }

  async create(organizationId: string, request: OAuthProviderCreateRequest): Promise<OAuthProviderResponse> {
    const now = new Date().toISOString();
    const record: OAuthProviderResponse = {
      id: randomUUID(),
      organization_id: organizationId,
      provider_id: request.provider_id,
      name: request.name,
      client_id: request.client_id,
      auth_url: request.auth_url,
      token_url: request.token_url,
      uses_pkce: request.uses_pkce,
      code_challenge_method: request.code_challenge_method,
      provider_type: request.provider_type ?? null,
      mcp_server_url: null,
      token_endpoint_auth_method: request.token_endpoint_auth_method,
      is_dynamic_client: false,
      authorization_params: request.authorization_params ?? null,
      allowed_redirect_uris: request.allowed_redirect_uris ?? null,
      default_redirect_uri: null,
      created_at: now,
      updated_at: now,
    };
    const name = providerObjectName(organizationId, request.provider_id);
    const created = await this.kube.core
      .createNamespacedConfigMap({ namespace: this.namespace, body: this.configMap(name, record) })
      .catch((error: unknown) => {
        throw isAlreadyExists(error) ? conflict(`OAuth provider '${request.provider_id}' already exists.`) : error;
      });
    if (request.client_secret) {
      try {
        await this.writeSecret(created, request.client_secret);
      } catch (error) {
        await orUndefined(this.kube.core.deleteNamespacedConfigMap({ namespace: this.namespace, name }));
        throw error;
      }
    }
    return record;
  }

  async update(
    organizationId: string,
    providerId: string,
    update: OAuthProviderUpdateRequest,
  ): Promise<OAuthProviderResponse> {
    const { client_secret: clientSecret, ...fields } = update;
    const changes = Object.fromEntries(Object.entries(fields).filter(([, value]) => value != null));
    return retryOnConflict(async () => {
      const configMap = await this.readConfigMap(organizationId, providerId);
      const record = configMap && recordOf(configMap);
      if (!configMap || !record) throw providerNotFound(providerId);
      if (clientSecret) await this.writeSecret(configMap, clientSecret);
      const updated: OAuthProviderResponse = { ...record, ...changes, updated_at: new Date().toISOString() };
      await this.kube.core.replaceNamespacedConfigMap({
        namespace: this.namespace,
        name: configMap.metadata?.name ?? "",
        body: { ...configMap, data: { [RECORD_KEY]: JSON.stringify(updated) } },
      });
      return updated;
    });
  }

  async delete(organizationId: string, providerId: string): Promise<void> {
    const name = providerObjectName(organizationId, providerId);
    const deleted = await orUndefined(this.kube.core.deleteNamespacedConfigMap({ namespace: this.namespace, name }));
    if (!deleted) throw providerNotFound(providerId);
    await orUndefined(this.kube.core.deleteNamespacedSecret({ namespace: this.namespace, name }));
  }

  private readConfigMap(organizationId: string, providerId: string): Promise<V1ConfigMap | undefined> {
    const name = providerObjectName(organizationId, providerId);
    return orUndefined(this.kube.core.readNamespacedConfigMap({ namespace: this.namespace, name }));
  }

  private configMap(name: string, record: OAuthProviderResponse): V1ConfigMap {
    return {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name,
        namespace: this.namespace,
        labels: { [LABEL_OAUTH_PROVIDER]: "true", [LABEL_ORGANIZATION_ID]: record.organization_id },
      },
      data: { [RECORD_KEY]: JSON.stringify(record) },
    };
  }

  /** Creates or replaces the provider's client_secret, owned by its ConfigMap so it is collected with it. */
  private async writeSecret(owner: V1ConfigMap, clientSecret: string): Promise<void> {
    const name = owner.metadata?.name ?? "";
    const body: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      type: "Opaque",
      metadata: {
        name,
        namespace: this.namespace,
        labels: owner.metadata?.labels,
        ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name, uid: owner.metadata?.uid ?? "" }],
      },
      data: { [SECRET_KEY]: Buffer.from(clientSecret, "utf8").toString("base64") },
    };
    const existing = await orUndefined(this.kube.core.readNamespacedSecret({ namespace: this.namespace, name }));
    if (!existing) {
      await this.kube.core.createNamespacedSecret({ namespace: this.namespace, body });
      return;
    }
    body.metadata = { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion };
    await this.kube.core.replaceNamespacedSecret({ namespace: this.namespace, name, body });
  }
}

function recordOf(configMap: V1ConfigMap): OAuthProviderResponse | undefined {
  const json = configMap.data?.[RECORD_KEY];
  return json ? (JSON.parse(json) as OAuthProviderResponse) : undefined;
}
