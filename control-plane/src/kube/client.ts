import {
  CoreV1Api,
  CustomObjectsApi,
  createConfiguration,
  KubeConfig,
  type RequestContext,
  type SecurityAuthentication,
  ServerConfiguration,
} from "@kubernetes/client-node";

/** The two Kubernetes API groups the control plane talks to, built once at start. */
export interface KubeClients {
  custom: CustomObjectsApi;
  core: CoreV1Api;
}

/** From an explicit kubeconfig file, else `KUBECONFIG` / `~/.kube/config` / the in-cluster service account. */
export function loadKubeConfig(kubeconfigPath?: string): KubeConfig {
  const config = new KubeConfig();
  if (kubeconfigPath) config.loadFromFile(kubeconfigPath);
  else config.loadFromDefault();
  return config;
}

type Dispatcher = NonNullable<ReturnType<RequestContext["getDispatcher"]>>;

/**
 * The kubeconfig's authentication, but with one connection pool: for TLS clusters client-node
 * builds a fresh undici Agent per request, i.e. a new TCP connection and TLS handshake every time.
 * Headers (tokens, exec credentials) are still applied per request; the TLS settings of the first
 * request are kept for the life of the process.
 */
class PooledAuthentication implements SecurityAuthentication {
  private readonly config: KubeConfig;
  private dispatcher: Dispatcher | undefined;

  constructor(config: KubeConfig) {
    this.config = config;
  }

  getName(): string {
    return "kubeconfig authentication (pooled connections)";
  }

  async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await this.config.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (!fresh) return;
    if (!this.dispatcher) {
      this.dispatcher = fresh;
      return;
    }
    void fresh.close();
    context.setDispatcher(this.dispatcher);
  }
}

export function createKubeClients(config: KubeConfig): KubeClients {
  const server = config.getCurrentCluster()?.server;
  if (!server) throw new Error("the kubeconfig has no current cluster");
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(server, {}),
    authMethods: { default: new PooledAuthentication(config) },
  });
  return { custom: new CustomObjectsApi(configuration), core: new CoreV1Api(configuration) };
}
