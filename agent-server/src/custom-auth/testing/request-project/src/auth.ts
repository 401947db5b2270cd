import { Auth, HTTPException } from "@langchain/langgraph-sdk/auth";

/**
 * Tells back what `authenticate` was handed: the user carries the request's method, URL and a
 * header, and the threads the user creates carry the user's copy in their metadata.
 */
export const auth = new Auth()
  .authenticate((request: Request) => {
    const token = request.headers.get("authorization")?.replace(/^Bearer /, "");
    if (!token) throw new HTTPException(401, { message: "No token" });
    return {
      identity: token,
      permissions: [],
      received: { method: request.method, url: request.url, probe: request.headers.get("x-probe") },
    };
  })
  .on("threads:create", ({ value, user }) => {
    value.metadata = { ...value.metadata, received: user.received };
  });
