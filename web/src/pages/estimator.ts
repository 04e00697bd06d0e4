// estimator.ts - the Estimator page: predicted against measured step
// time for every stored measurement that has both (finished jobs, and
// profile rows where a prediction was recorded), log-log by device type;
// the validation table; what it was fitted on; refit for admins.
import { ApiError, get, send } from "../api";
import { clear, h, table, when } from "../dom";
import type { Ctx } from "../main";
import { follow, scatterLog } from "../plot";

interface Meas { id: number; kind: string; device_type: string | null; step_time_s: number | null; predicted_step_time_s: number | null; batch: number }
interface Est {
  version: number; family: string; provenance?: unknown;
  fitted_on?: Record<string, number>;
  validation?: Record<string, unknown>[] | null;
  refit: { running: boolean; started_s: number | null; ended_s: number | null; error: string | null };
}

// Measurements read, at most (10 pages of the API's largest).
const MAX_MEAS = 100000;

// Every stored measurement, oldest first, page by page (next_after), up to
// MAX_MEAS; more: some were not read.
async function measurements(): Promise<{ rows: Meas[]; more: boolean }> {
  const rows: Meas[] = [];
  let after: number | null = null;
  do {
    const r: { measurements: Meas[]; next_after: number | null } = await get(`/v1/measurements?limit=10000${after ? "&after=" + after : ""}`);
    rows.push(...r.measurements);
    after = r.next_after;
  } while (after !== null && rows.length < MAX_MEAS);
  return { rows, more: after !== null };
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return "-";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toPrecision(3);
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

export function estimatorPage(root: HTMLElement, ctx: Ctx): () => void {
  const info = h("div");
  const err = h("p", { class: "error", role: "alert" });
  const plotEl = h("div", { class: "chart", id: "est-plot", role: "img", "aria-label": "measured against predicted step time, log-log, by device type" });
  const plotNote = h("p", { class: "muted", id: "est-note" });
  const refit = ctx.can("admin") ? h("button", { type: "button", id: "refit", onclick: () => doRefit() }, "Refit the estimator") : null;
  clear(root, h("h1", null, "Estimator"), err, info, refit, h("h2", null, "Predicted against measured step time"), plotNote, plotEl);
  let stopPlot: (() => void) | null = null;
  let timer = 0;

  async function load(): Promise<void> {
    try {
      const [e, m] = await Promise.all([get<Est>("/v1/estimator"), measurements()]);
      const v = Array.isArray(e.validation) ? e.validation : [];
      const cols = v.length ? Object.keys(v[0]) : [];
      clear(info,
        h("dl", { class: "facts" },
          h("dt", null, "Version"), h("dd", { id: "est-version" }, String(e.version)),
          h("dt", null, "Family"), h("dd", null, e.family),
          h("dt", null, "Fitted on"), h("dd", null, e.fitted_on ? Object.entries(e.fitted_on).map(([k, n]) => `${k.replace(/_/g, " ")}: ${n}`).join(", ") : "-"),
          h("dt", null, "Refit"), h("dd", { id: "refit-state" }, e.refit.running ? `running since ${when(e.refit.started_s)}` : e.refit.error ? `failed: ${e.refit.error}` : e.refit.ended_s ? `done ${when(e.refit.ended_s)}` : "none since start")),
        h("h2", null, "Validation"),
        v.length ? h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "validation" }, table(cols, v.map((r) => cols.map((c) => cell(r[c]))), "Validation errors")) : h("p", { class: "muted" }, "No validation recorded for this estimator (a refit validates it)."));
      if (refit) refit.disabled = e.refit.running;
      const rows = m.rows.filter((r) => (r.step_time_s ?? 0) > 0 && (r.predicted_step_time_s ?? 0) > 0);
      const groups = new Map<string, [number, number][]>();
      for (const r of rows) {
        const k = `${r.device_type || "?"} (${r.kind === "job" ? "jobs" : "profile rows"})`;
        if (!groups.has(k)) groups.set(k, []);
        groups.get(k)!.push([r.predicted_step_time_s!, r.step_time_s!]);
      }
      plotNote.textContent = `${rows.length} plotted of ${m.more ? `the oldest ${m.rows.length} stored measurements (newer ones are stored, not read)` : `the ${m.rows.length} stored measurements`}: those that have both a measured and a predicted step time. A finished job's prediction is the one made when it was submitted, a profile row's is the estimator's in use.`;
      if (stopPlot) stopPlot();
      stopPlot = null;
      clear(plotEl);
      if (rows.length) {
        const u = scatterLog(plotEl, [...groups].map(([label, pts]) => ({ label, pts })));
        stopPlot = follow(u, plotEl, 360);
      }
      err.textContent = "";
      clearInterval(timer);
      if (e.refit.running) timer = window.setTimeout(load, 3000);
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      err.textContent = (e as Error).message;
    }
  }

  async function doRefit(): Promise<void> {
    try {
      await send("POST", "/v1/estimator/refit", { validate: true });
      await load();
    } catch (e) {
      err.textContent = (e as Error).message;
    }
  }

  load();
  return () => {
    clearTimeout(timer);
    if (stopPlot) stopPlot();
  };
}
