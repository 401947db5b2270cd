import { Auth, HTTPException } from "@langchain/langgraph-sdk/auth";

/** Bearer tokens of the test users; `Bearer crash` makes authenticate throw a plain error. */
const USERS: Record<string, { identity: string; permissions: string[]; team: string }> = {
  "token-alice": { identity: "alice", permissions: ["threads:write"], team: "red" },
  "token-bob": { identity: "bob", permissions: [], team: "blue" },
};

/**
 * The ownership model of the LangGraph.js custom-auth guide: every resource is stamped with its
 * creator as `metadata.owner` and filtered on it; store items live under the user's namespace.
 */
export const auth = new Auth()
  .authenticate(async (request: Request) => {
    // The reference server authenticates its health check too (ours never asks about /ok): probes pass.
    if (new URL(request.url).pathname === "/ok") return { identity: "probe", permissions: [] };
    const token = request.headers.get("authorization")?.replace(/^Bearer /, "");
    if (token === "crash") throw new Error("the identity provider is down");
    const user = token ? USERS[token] : undefined;
    if (!user) throw new HTTPException(401, { message: "Invalid token", headers: { "WWW-Authenticate": "Bearer" } });
    return user;
  })
  .on("*", ({ value, user }) => {
    if (value && typeof value === "object" && "metadata" in value) {
      const record = value as { metadata?: Record<string, unknown> | null };
      record.metadata = { ...record.metadata, owner: user.identity };
    }
    return { owner: user.identity };
  })
  .on("threads:delete", ({ user }) => {
    // Deleting needs a permission bob does not have: a 403, not a filter.
    if (!user.permissions.includes("threads:write")) return false;
    return { owner: user.identity };
  })
  .on("store", ({ value, user }) => {
    const item = value as { namespace?: string[] | null };
    item.namespace = [user.identity, ...(item.namespace ?? [])];
    return { namespace: { $contains: user.identity } };
  });
