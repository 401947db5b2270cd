import type { Response } from "express";
import type { Page } from "../storage/types.ts";

/**
 * `X-Pagination-Total` always; `X-Pagination-Next` (the offset of the next page) only when
 * more records follow, which is how SDK clients know to ask again.
 */
export function sendPage<T extends object>(
  res: Response,
  offset: number,
  page: Page<T>,
  select?: readonly string[],
): Partial<T>[] {
  res.setHeader("X-Pagination-Total", String(page.total));
  const next = offset + page.items.length;
  if (page.items.length > 0 && next < page.total) res.setHeader("X-Pagination-Next", String(next));
  if (!select) return page.items;
  return page.items.map(
    (item) =>
      Object.fromEntries(
        select.filter((field) => field in item).map((field) => [field, item[field as keyof T]]),
      ) as Partial<T>,
  );
}
