import { createApiSchemaRegistry } from "@agentplane/common";

/** The control plane's named OpenAPI components; the Agent Server keeps its own. */
export const apiSchemas = createApiSchemaRegistry();
