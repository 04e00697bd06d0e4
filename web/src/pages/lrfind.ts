// lrfind.ts - the LR range test page: the jobs that ran one (a job
// submitted with training.lr_range), and for one of them the loss against
// the learning rate on a log axis: every step, the smoothed loss, the
// polynomial and the logarithmic fit, the suggested interval shaded and
// the suggested rate marked, with how each was found.  It follows a test
// while it runs (GET /v1/jobs/ID/lr-find 2 s after the last look ended).
import uPlot from "uplot";
import { ApiError, get } from "../api";
import { clear, h, table, when } from "../dom";
import type { Ctx } from "../main";
import { color, follow, logTicks } from "../plot";
import { poller } from "../poll";

interface RangeJob {
  id: number; name: string | null; state: string; created_s: number;
  description?: { training?: { lr_range?: { lr_min: number; lr_max: number } } };
}

interface Analysis {
  suggested_lr: number | null; suggested_how: string;
  interval: [number | null, number | null]; interval_how: { low: string; high: string };
  steps_run: number; stopped_early: boolean; diverged: boolean; diverged_at_lr: number | null;
  accuracy_at_suggested: number | null; warnings: string[];
}

interface LrFind {
  job_id: number; state: string; lr_min: number; lr_max: number; steps_requested: number; steps_read: number;
  analysis: Analysis | null; analysis_error: string | null;
  points: { step: number; lr: number; loss: number | null; accuracy: number | null }[];
  curves: { smoothed: [number, number | null][]; polynomial: [number, number | null][]; log_fit: [number, number | null][] } | null;
}

const LIVE = ["queued", "starting", "running"];
const rate = (x: number | null | undefined): string => (x === null || x === undefined || !isFinite(x) ? "-" : x.toPrecision(3));
// Jobs looked at per click, newest first (the API has no filter for range
// tests: every job's description is read).
const SCAN = 5000;

export function lrFindPage(root: HTMLElement, ctx: Ctx, arg: string): (() => void) | void {
  if (arg) return testPage(root, Number(arg));
  const body = h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "range tests" });
  const err = h("p", { class: "error", role: "alert" });
  clear(root, h("h1", null, "LR range tests"),
    h("p", { class: "muted" }, "A range test trains for a bounded number of steps while the learning rate rises exponentially, then fits the loss to find a good interval of rates and a suggested one (docs/lr-find.md). Jobs submitted with training.lr_range run one",
      ctx.can("user") ? ["; the ", h("a", { href: "#/plan" }, "plan page"), " submits one."] : "."),
    err, body);
  const found: RangeJob[] = [];
  let after: number | null = null; // where the next look starts (older jobs)
  let seen = 0;
  let stopped = false;
  async function scan(): Promise<void> {
    try {
      const upto = seen + SCAN;
      do {
        const r: { jobs: RangeJob[]; next_after: number | null } = await get(`/v1/jobs?limit=1000&order=newest${after ? "&after=" + after : ""}`);
        if (stopped) return;
        seen += r.jobs.length;
        found.push(...r.jobs.filter((j) => j.description?.training?.lr_range));
        after = r.next_after;
      } while (after !== null && seen < upto);
      err.textContent = "";
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      err.textContent = (e as Error).message;
    }
    const all = after === null;
    const t = table(["job", "name", "state", "rates", "submitted"],
      found.map((j) => {
        const r = j.description!.training!.lr_range!;
        return [h("a", { href: "#/lr-find/" + j.id }, "#" + j.id), j.name || "", h("span", { class: "state-" + j.state }, j.state), `${rate(r.lr_min)} to ${rate(r.lr_max)}`, when(j.created_s)];
      }), all ? `Range tests (${found.length})` : `Range tests (${found.length} among the newest ${seen} jobs)`);
    t.id = "range-tests";
    const older = all ? null : h("p", { class: "muted", id: "range-tests-more" }, `Only the newest ${seen} jobs were looked at. `,
      h("button", { type: "button", class: "link", id: "more-range-tests", onclick: (ev: Event) => { (ev.target as HTMLButtonElement).disabled = true; scan(); } }, "Look at older jobs"));
    clear(body, found.length ? t : h("p", { class: "muted" }, all ? "No job has run a range test yet." : `No range test among the newest ${seen} jobs.`), older);
    if (older && document.activeElement === document.body) older.querySelector("button")?.focus();
  }
  scan();
  return () => {
    stopped = true;
  };
}

function testPage(root: HTMLElement, id: number): () => void {
  const head = h("div");
  const facts = h("dl", { class: "facts", id: "lr-facts" });
  const plotEl = h("div", { class: "chart", id: "lr-plot", role: "img", "aria-label": "loss against the learning rate (log axis): every step, the smoothed loss, both fits, the suggested interval shaded and the suggested rate marked" });
  const note = h("p", { class: "muted", id: "lr-note" });
  const err = h("p", { class: "error", role: "alert" });
  clear(root, head, err, facts, h("section", null, h("h2", null, "Loss against the learning rate"), plotEl, note));
  let u: uPlot | null = null;
  let stopPlot: (() => void) | null = null;
  let stopped = false;
  let band: [number, number] | null = null;
  let suggested: number | null = null;
  let yRange: [number, number] | null = null;

  // the interval shaded, the suggested rate as a line
  const marks = (p: uPlot) => {
    const c = p.ctx;
    c.save();
    if (band) {
      const x0 = p.valToPos(band[0], "x", true), x1 = p.valToPos(band[1], "x", true);
      c.fillStyle = "rgba(44, 160, 44, 0.15)";
      c.fillRect(x0, p.bbox.top, x1 - x0, p.bbox.height);
    }
    if (suggested) {
      const x = p.valToPos(suggested, "x", true);
      c.strokeStyle = "#2ca02c";
      c.lineWidth = 2 * devicePixelRatio;
      c.beginPath();
      c.moveTo(x, p.bbox.top);
      c.lineTo(x, p.bbox.top + p.bbox.height);
      c.stroke();
    }
    c.restore();
  };

  function draw(r: LrFind): void {
    // one x for all series: every rate any of them has
    const cur = r.curves || { smoothed: [], polynomial: [], log_fit: [] };
    const raw: [number, number | null][] = r.points.map((p) => [p.lr, p.loss !== null && isFinite(p.loss) ? p.loss : null]);
    const sets = [raw, cur.smoothed, cur.polynomial, cur.log_fit];
    const xs = [...new Set(sets.flatMap((s) => s.map((p) => p[0])))].sort((a, b) => a - b);
    const idx = new Map(xs.map((x, i) => [x, i]));
    const cols = sets.map((s) => {
      const c: (number | null)[] = xs.map(() => null);
      for (const [x, y] of s) c[idx.get(x)!] = y;
      return c;
    });
    const data = [xs, ...cols] as uPlot.AlignedData;
    // the loss's scale from the smoothed curve (the steps after the
    // divergence would flatten everything else)
    const sm = cur.smoothed.map((p) => p[1]).filter((y): y is number => y !== null && isFinite(y));
    yRange = sm.length ? [Math.min(...sm) * 0.8, Math.max(...sm) * 1.3] : null;
    if (!u) {
      u = new uPlot({
        width: Math.max(240, plotEl.clientWidth || 600),
        height: 320,
        scales: { x: { time: false, distr: 3 }, y: { range: (_u, lo, hi) => yRange ?? [lo, hi] } },
        series: [
          { label: "learning rate" },
          { label: "loss (each step)", stroke: color(7), paths: () => null, points: { show: true, size: 3, fill: color(7) } },
          { label: "smoothed", stroke: color(0), width: 2, spanGaps: true, points: { show: false } },
          { label: "polynomial fit", stroke: color(1), width: 2, spanGaps: true, points: { show: false } },
          { label: "log fit", stroke: color(3), width: 2, dash: [6, 4], spanGaps: true, points: { show: false } },
        ],
        axes: [{ label: "learning rate (log)", values: logTicks }, { label: "loss", size: 60 }],
        hooks: { draw: [marks] },
      }, data, plotEl);
      stopPlot = follow(u, plotEl, 320);
    } else {
      u.setData(data);
    }
    // What was handed to uPlot, for tests and for a check by hand.
    const d = u.data;
    const pairs = (k: number) => Array.from(d[0] as ArrayLike<number>, (x, i) => [x, d[k][i]]).filter((p) => p[1] !== null && p[1] !== undefined);
    plotEl.dataset.points = JSON.stringify(pairs(1));
    plotEl.dataset.polynomial = JSON.stringify(pairs(3));
  }

  // One look; false once the test has ended and was read (or the job
  // ended before it was launched); an error is shown and tried again.
  async function poll(): Promise<boolean> {
    let r: LrFind;
    try {
      // not launched yet (queued): nothing to read, wait for it, without
      // asking for the analysis (a 409 the browser would log as an error)
      const job = await get<{ deployment: unknown; state: string }>(`/v1/jobs/${id}`);
      if (!job.deployment) {
        const ended = ["succeeded", "failed", "cancelled"].includes(job.state);
        clear(head, h("h1", null, `Range test, job #${id}`),
          h("p", null, ended ? `The job was ${job.state} before it was launched: there is no range test to show.` : "Not launched yet."));
        err.textContent = "";
        return !ended;
      }
      r = await get<LrFind>(`/v1/jobs/${id}/lr-find`);
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      if (e instanceof ApiError && e.problem.status === 409) {
        // launched in between: the next look has it
        clear(head, h("h1", null, `Range test, job #${id}`), h("p", null, "Not launched yet."));
        return true;
      }
      if (!stopped) err.textContent = (e as Error).message;
      return !stopped;
    }
    if (stopped) return false;
    err.textContent = "";
    const a = r.analysis;
    band = a && a.interval[0] && a.interval[1] ? [a.interval[0], a.interval[1]] : null;
    suggested = a?.suggested_lr ?? null;
    clear(head, h("h1", null, `Range test, job #${id}`),
      h("p", null, h("span", { id: "lr-state", class: "state-" + r.state }, r.state), " - ", h("a", { href: "#/jobs/" + id }, "the job's page")));
    clear(facts,
      h("dt", null, "Rates tried"), h("dd", null, `${rate(r.lr_min)} to ${rate(r.lr_max)}, ${r.steps_read} of ${r.steps_requested || "?"} steps`),
      h("dt", null, "Suggested rate"), h("dd", null, h("span", { id: "lr-suggested" }, a ? rate(a.suggested_lr) : "-"), a ? h("small", { class: "muted how" }, a.suggested_how) : null),
      h("dt", null, "Interval"), h("dd", null, h("span", { id: "lr-interval" }, a ? `${rate(a.interval[0])} to ${rate(a.interval[1])}` : "-"), a ? h("small", { class: "muted how" }, `low: ${a.interval_how.low}; high: ${a.interval_how.high}`) : null),
      a && a.diverged ? [h("dt", null, "Diverged"), h("dd", null, `at rate ${rate(a.diverged_at_lr)} (the run stopped there)`)] : null,
      a && a.accuracy_at_suggested !== null ? [h("dt", null, "Accuracy at the suggestion"), h("dd", null, `${(100 * a.accuracy_at_suggested).toFixed(1)}% (smoothed, during the test)`)] : null);
    note.textContent = a
      ? (a.warnings.length ? "Warnings: " + a.warnings.join("; ") : "")
      : `No analysis yet: ${r.analysis_error || "too few steps"}.`;
    draw(r);
    return LIVE.includes(r.state);
  }

  const looks = poller(poll, 2000);
  return () => {
    stopped = true;
    looks.stop();
    if (stopPlot) stopPlot();
  };
}
