export {
  API_TITLE,
  API_VERSION,
  type ControlPlane,
  createControlPlane,
  type RunningControlPlane,
  startControlPlane,
} from "./app.ts";
export type { JwtConfig } from "./auth/jwt.ts";
export { type ApiKeyGrant, parseApiKeyGrants } from "./auth/principal.ts";
export { ConfigError, type ControlPlaneConfig, loadConfig } from "./config.ts";
