// api.ts - the dashboard's only way to the server: /v1 with the bearer
// token kept in sessionStorage (never in a URL).  Errors come back as
// ApiError carrying the problem+json document (RFC 9457) the server sent.

const KEY = "hetpool.token";

export type Role = "reader" | "user" | "admin";

export interface Who {
  token_id: number;
  name: string;
  role: Role;
}

export interface Problem {
  type?: string;
  title?: string;
  status: number;
  detail?: string;
  field?: string;
}

export class ApiError extends Error {
  problem: Problem;
  constructor(p: Problem) {
    super(p.detail || p.title || "HTTP " + p.status);
    this.problem = p;
  }
}

export function token(): string | null {
  return sessionStorage.getItem(KEY);
}

export function setToken(t: string | null): void {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

export interface Raw {
  text: string;
  size: number; // X-Size, for logs and metrics
}

async function call(method: string, path: string, body?: BodyInit, ctype?: string, tok?: string): Promise<Response> {
  const h: Record<string, string> = {};
  const t = tok ?? token();
  if (t) h["Authorization"] = "Bearer " + t;
  if (ctype) h["Content-Type"] = ctype;
  let r: Response;
  try {
    r = await fetch(path, { method, headers: h, body, cache: "no-store" });
  } catch (e) {
    throw new ApiError({ status: 0, title: "Network error", detail: "cannot reach the server: " + String(e) });
  }
  if (!r.ok) {
    let p: Problem = { status: r.status, title: r.statusText };
    try {
      const j = await r.json();
      if (j && typeof j === "object") p = { ...p, ...j };
    } catch {
      /* not problem+json */
    }
    throw new ApiError(p);
  }
  return r;
}

export async function get<T>(path: string): Promise<T> {
  return (await call("GET", path)).json() as Promise<T>;
}

export async function getRaw(path: string): Promise<Raw> {
  const r = await call("GET", path);
  return { text: await r.text(), size: Number(r.headers.get("X-Size") || "0") };
}

export async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  const r = await call(method, path, body === undefined ? undefined : JSON.stringify(body), body === undefined ? undefined : "application/json");
  return r.status === 204 ? (undefined as T) : (r.json() as Promise<T>);
}

export async function upload<T>(path: string, data: Blob, ctype: string): Promise<T> {
  return (await call("POST", path, data, ctype)).json() as Promise<T>;
}

export async function whoami(tok: string): Promise<Who> {
  return (await call("GET", "/v1/whoami", undefined, undefined, tok)).json() as Promise<Who>;
}

// A GET started early (while the token is being checked), taken once by
// the page that wants it if it is still fresh; else a new GET.
const early = new Map<string, { at: number; p: Promise<unknown> }>();

export function prefetch(path: string): void {
  const p = get(path);
  p.catch(() => undefined); // the page's own GET reports errors
  early.set(path, { at: Date.now(), p });
}

export function getEarly<T>(path: string, maxAgeMs = 5000): Promise<T> {
  const e = early.get(path);
  early.delete(path);
  return e && Date.now() - e.at < maxAgeMs ? (e.p as Promise<T>) : get<T>(path);
}
