import { z } from "zod";

/** A boolean query parameter: `true`/`false` as the SDKs send it, or `1`/`0`. */
export const QueryBoolean = z.enum(["true", "false", "1", "0"]).transform((value) => value === "true" || value === "1");
