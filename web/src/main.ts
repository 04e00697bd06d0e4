// main.ts - the dashboard's shell: sign in with a token (kept in
// sessionStorage for this tab), the navigation, and a router over the
// URL's fragment (#/pool, #/plan, #/jobs, #/jobs/ID, #/estimator,
// #/lr-find, #/lr-find/ID).  Each
// page gets the caller's role and offers only what that role may do.
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { ApiError, Who, prefetch, setToken, token, whoami } from "./api";
import { clear, h } from "./dom";
import { poolPage } from "./pages/pool";
import { planPage } from "./pages/plan";
import { jobsPage, jobPage } from "./pages/jobs";
import { estimatorPage } from "./pages/estimator";
import { lrFindPage } from "./pages/lrfind";

export interface Ctx {
  who: Who;
  can(role: "user" | "admin"): boolean;
}

type Page = (root: HTMLElement, ctx: Ctx, arg: string) => (() => void) | void;

const pages: { path: string; title: string; page: Page }[] = [
  { path: "pool", title: "Pool", page: poolPage },
  { path: "plan", title: "Plan a job", page: planPage },
  { path: "jobs", title: "Jobs", page: jobsPage },
  { path: "estimator", title: "Estimator", page: estimatorPage },
  { path: "lr-find", title: "LR range tests", page: lrFindPage },
];

const app = document.getElementById("app")!;
let stop: (() => void) | void;
let ctx: Ctx | null = null;

// Stop the page's timers (its polling) and forget the signed-in caller:
// nothing may ask the server, without a token, behind the sign-in form.
function leave(): void {
  if (stop) stop();
  stop = undefined;
  ctx = null;
}

// A token as pasted: without surrounding white space, zero-width
// characters, or a leading "Bearer " copied from a header.
export function cleanToken(s: string): string {
  return s.replace(/[\u200B-\u200D\u2060\uFEFF]/g, "").trim().replace(/^Bearer\s+/i, "").trim();
}

function login(msg?: string, note?: string): void {
  const input = h("input", { id: "token", type: "password", autocomplete: "off", required: true, "aria-describedby": "token-help" });
  const err = h("p", { class: "error", role: "alert", id: "login-error" }, msg || "");
  const form = h("form", { class: "login", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "hetpool"),
    h("label", { for: "token" }, "API token"),
    input,
    h("p", { id: "token-help", class: "muted" }, "Your hetpoold token (hpt_...). It is kept for this tab only and sent only in the Authorization header."),
    h("button", { type: "submit" }, "Sign in"),
    note ? h("p", { class: "muted", id: "login-note", role: "status" }, note) : null,
    err);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = cleanToken(input.value);
    try {
      const who = await whoami(t);
      setToken(t);
      start(who);
    } catch (e) {
      err.textContent = e instanceof ApiError ? e.message : String(e);
    }
  });
  clear(app, h("main", null, form));
  input.focus();
}

function start(who: Who): void {
  ctx = {
    who,
    can: (role) => (role === "user" ? who.role !== "reader" : who.role === "admin"),
  };
  if (!location.hash || location.hash === "#/") location.hash = "#/pool";
  route();
}

function route(): void {
  if (!ctx) return;
  if (stop) stop();
  stop = undefined;
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  let p = pages.find((x) => x.path === parts[0]);
  let arg = parts[1] || "";
  if (!p) {
    p = pages[0];
    arg = "";
  }
  const page: Page = p.path === "jobs" && arg ? jobPage : p.page;
  const main = h("main", { id: "main" });
  const nav = h("nav", { "aria-label": "pages" },
    h("span", { class: "brand" }, "hetpool"),
    h("ul", null, pages.map((x) => h("li", null, h("a", { href: "#/" + x.path, "aria-current": x === p ? "page" : null }, x.title)))),
    h("span", { class: "who" }, `${ctx.who.name} (${ctx.who.role})`),
    h("button", { type: "button", class: "link", onclick: signOut }, "Sign out"));
  clear(app, h("header", null, nav), main);
  document.title = p.title + " - hetpool";
  stop = page(main, ctx, arg);
}

function signOut(): void {
  leave();
  setToken(null);
  location.hash = "";
  login(undefined, "Signed out.");
}

window.addEventListener("hashchange", route);
window.addEventListener("unhandledrejection", (ev) => {
  const e = ev.reason;
  if (e instanceof ApiError && e.problem.status === 401) {
    ev.preventDefault();
    // signed out already (an answer that was on its way): the form stays
    // as the user is filling it
    if (!ctx) return;
    leave();
    setToken(null);
    login("Your token is no longer accepted: sign in again.");
  }
});

// The token kept for this tab is checked once at load: only a 401 forgets
// it; another error (the server restarting: 503, a 500, no network) is
// shown with Retry, the token kept.
async function boot(): Promise<void> {
  const t = token();
  if (!t) return login();
  // the plan page's first recommendation waits for the models: ask for
  // them while the token is checked
  if (location.hash.startsWith("#/plan")) prefetch("/v1/models");
  try {
    start(await whoami(t));
  } catch (e) {
    if (e instanceof ApiError && e.problem.status === 401) {
      setToken(null);
      login(e.message);
      return;
    }
    const retry = h("button", { type: "button", id: "retry", onclick: () => { retry.disabled = true; boot(); } }, "Retry");
    clear(app, h("main", { class: "boot" },
      h("h1", null, "hetpool"),
      h("p", { class: "error", role: "alert", id: "boot-error" }, "Cannot check your token: " + (e instanceof Error ? e.message : String(e))),
      h("p", null, retry, " ", h("button", { type: "button", class: "link", onclick: signOut }, "Sign in with another token"))));
    retry.focus();
  }
}

boot();
