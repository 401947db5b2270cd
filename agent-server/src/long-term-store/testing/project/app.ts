import express from "express";

/** The project's own routes (`http.app`), mounted by the server before its API routes. */
export const app = express.Router();

app.get("/custom/hello", (req, res) => {
  res.json({ hello: req.query.name ?? "world" });
});
