import { authConfigurable, authorize, type RequestAuth } from "../custom-auth/authorize.ts";
import { objectOr, type RunCreate } from "./build.ts";

/**
 * The run's config with the authenticated user where graphs find it, as on the reference
 * (`langgraph_auth_user`, `_user_id`, `_permissions`), over anything the request put there. It
 * is stored with the run, so a worker in another process sees the same user; the credentials
 * the request carried are not (only the user `authenticate` returned).
 */
export function withAuthUser(payload: RunCreate, auth: RequestAuth): RunCreate {
  const config = objectOr(payload.config);
  return {
    ...payload,
    config: { ...config, configurable: { ...objectOr(config.configurable), ...authConfigurable(auth) } },
  };
}

/**
 * `threads:create_run` with what the reference passes; the handler may change the run's
 * metadata (which a new thread gets too). The filter the thread must match, and the metadata.
 */
export async function authorizeRunCreate(
  threadId: string | undefined,
  payload: RunCreate,
  runId: string | undefined,
  auth: RequestAuth,
) {
  const strategy = payload.multitask_strategy ?? "enqueue";
  const value = {
    thread_id: threadId,
    assistant_id: payload.assistant_id,
    run_id: runId,
    status: "pending",
    metadata: { ...payload.metadata },
    prevent_insert_if_inflight: strategy === "reject",
    multitask_strategy: strategy,
    if_not_exists: payload.if_not_exists,
    after_seconds: payload.after_seconds,
    kwargs: {
      input: payload.input,
      command: payload.command,
      config: payload.config,
      context: payload.context,
      stream_mode: payload.stream_mode,
    },
  };
  const filter = await authorize(auth, "threads:create_run", value);
  return { filter, metadata: value.metadata };
}
