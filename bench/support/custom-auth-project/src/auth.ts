import { Auth, HTTPException } from "@langchain/langgraph-sdk/auth";

/** `Bearer user-<n>` is user `user-<n>`: the cost measured is the server's, not an identity provider's. */
export const auth = new Auth()
  .authenticate((request: Request) => {
    const token = request.headers.get("authorization")?.slice("Bearer ".length);
    if (!token?.startsWith("user-")) throw new HTTPException(401, { message: "Invalid token" });
    return { identity: token, permissions: [] };
  })
  .on("*", ({ value, user }) => {
    if (value && typeof value === "object" && "metadata" in value) {
      const record = value as { metadata?: Record<string, unknown> | null };
      record.metadata = { ...record.metadata, owner: user.identity };
    }
    return { owner: user.identity };
  });
