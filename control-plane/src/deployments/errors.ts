import { badRequest, conflict, notFound } from "@agentplane/common";

export const deploymentNotFound = (id: string) => notFound(`Deployment ID ${id} not found.`);
export const nameTaken = (name: string) => conflict(`A deployment named '${name}' already exists.`);
export const beingDeleted = (id: string) => badRequest(`Deployment ID ${id} is being deleted.`);
