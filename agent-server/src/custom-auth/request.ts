import type { Request as ExpressRequest } from "express";

const FIELDS = Symbol("authenticate request");

interface Fields {
  method: string;
  url: string;
  headers: Headers;
  built?: Request;
}

type LazyRequest = Request & { [FIELDS]: Fields };

function built(request: LazyRequest): Request {
  const fields = request[FIELDS];
  fields.built ??= new Request(fields.url, { method: fields.method, headers: fields.headers });
  return fields.built;
}

/**
 * Method, URL and headers of their own; every other member of `Request` (signal, clone, text, …)
 * forwards to a real `Request` built the first time one is used. Inherited `Request` members
 * would fail the brand check on this object, so each one is overridden.
 */
const LAZY_REQUEST_PROTOTYPE: Request = (() => {
  const descriptors: PropertyDescriptorMap = {
    method: {
      get(this: LazyRequest) {
        return this[FIELDS].method;
      },
    },
    url: {
      get(this: LazyRequest) {
        return this[FIELDS].url;
      },
    },
    headers: {
      get(this: LazyRequest) {
        return this[FIELDS].headers;
      },
    },
  };
  for (const key of Reflect.ownKeys(Request.prototype)) {
    if (key === "constructor" || key === Symbol.toStringTag || key in descriptors) continue;
    const inherited = Object.getOwnPropertyDescriptor(Request.prototype, key);
    if (inherited?.get) {
      descriptors[key] = {
        get(this: LazyRequest) {
          return Reflect.get(built(this), key);
        },
      };
    } else if (typeof inherited?.value === "function") {
      const method = inherited.value as (...args: unknown[]) => unknown;
      descriptors[key] = {
        value(this: LazyRequest, ...args: unknown[]) {
          return method.apply(built(this), args);
        },
      };
    }
  }
  return Object.create(Request.prototype, descriptors) as Request;
})();

/** A `Request` (`instanceof` holds) with this method, URL and headers, whose body is empty. */
export function lazyRequest(method: string, url: string, headers: Headers): Request {
  const request = Object.create(LAZY_REQUEST_PROTOTYPE) as LazyRequest;
  request[FIELDS] = { method, url, headers };
  return request;
}

/**
 * The request as the reference hands it to `authenticate`: method, full URL and headers (the
 * body stays unread). Built as the reference's HTTP layer (@hono/node-server) builds its own:
 * most `authenticate`s read a header or two, and a whole WHATWG `Request` costs about three
 * times its `Headers` (20 against 6 µs here), so the rest of it is only built when asked for.
 */
export function authenticateRequest(req: ExpressRequest): Request {
  // From the raw list, as the reference's HTTP layer does: repeated headers are appended as sent.
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (!name.startsWith(":")) headers.append(name, raw[i + 1] as string);
  }
  return lazyRequest(req.method, `${req.protocol}://${req.get("host") ?? "localhost"}${req.originalUrl}`, headers);
}
