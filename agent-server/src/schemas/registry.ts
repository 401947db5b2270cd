import { createApiSchemaRegistry } from "@agentplane/common";

/** The Agent Server's named OpenAPI components; the control plane keeps its own. */
export const apiSchemas = createApiSchemaRegistry();
