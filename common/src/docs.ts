import { createRequire } from "node:module";
import { dirname } from "node:path";
import express, { type Router } from "express";

const swaggerUiAssets = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

/**
 * Serves an interactive API reference at `/docs` from the locally installed Swagger UI
 * assets (no CDN), reading the document from `specPath`.
 */
export function docsRouter(title: string, specPath = "/openapi.json"): Router {
  const router = express.Router();
  router.use("/docs/assets", express.static(swaggerUiAssets, { index: false }));
  router.get("/docs", (_req, res) => {
    res.type("html").send(`<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>${title} — API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: ${JSON.stringify(specPath)}, dom_id: "#swagger-ui", deepLinking: true });
  </script>
</body>
</html>`);
  });
  return router;
}
