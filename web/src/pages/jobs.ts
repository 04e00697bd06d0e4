// jobs.ts - the Jobs list (state, progress, predicted end against the
// deadline) and a job's page, which follows the job while it runs: loss
// and accuracy, the learning rate, each rank's step time (re-splits
// marked), predicted against measured step time, energy so far, the
// log's tail, and cancel for its owner or an admin.  The trainer's
// metrics are read incrementally (?offset=), every 2 s after the last
// look ended; once the job has ended, to the file's end, then no more.
import { ApiError, get, getRaw, send } from "../api";
import { clear, dur, energy, h, keepFocus, table, when } from "../dom";
import type { Ctx } from "../main";
import { follow, lines } from "../plot";
import { poller } from "../poll";
import type { Rec } from "./plan";
import uPlot from "uplot";

interface Job {
  id: number; name: string | null; state: string; reason: string | null; owner: number | null;
  created_s: number; started_s: number | null; ended_s: number | null;
  predicted_start_s: number | null; predicted_end_s: number | null;
  deadline: { at_s: number | null; can_be_met?: boolean | null; met?: boolean | null };
  cancel_requested: boolean; deployment: { id: string } | null; devices: { node: string; type: string; index: number; held: boolean }[];
  // the recommendation, or (a CPU job of the local backend) the host's plan
  plan?: Partial<Rec> & { steps?: number; predicted_step_time_s?: number | null; note?: string };
  description?: { training?: { lr_range?: { lr_min: number; lr_max: number } } };
}

const LIVE = ["queued", "starting", "running"];
const CHUNK = 4 << 20; // metrics bytes a request (the server's default is 1 MiB, its most 16)
const TAIL = 16384; // the log's tail shown

function progress(j: Job, now: number): string {
  if (!LIVE.includes(j.state)) return j.state === "succeeded" ? "100%" : "-";
  if (!j.started_s || !j.predicted_end_s || j.predicted_end_s <= j.started_s) return "0%";
  return Math.min(99, Math.floor((100 * (now - j.started_s)) / (j.predicted_end_s - j.started_s))) + "% (by time)";
}

// An ended job's deadline is met or missed only when it succeeded (met
// null: cancelled or failed, not judged); a live one's is predicted (null
// while there is no predicted end).
function deadlineCell(j: Job): HTMLElement {
  const d = j.deadline;
  if (!d.at_s) return h("span", null, "-");
  const ended = d.met !== undefined;
  const ok = ended ? d.met : d.can_be_met;
  if (ok === null || ok === undefined)
    return h("span", { class: "muted" }, `${when(d.at_s)} (${ended ? "not judged: the job did not finish" : "no prediction yet"})`);
  return h("span", { class: ok ? "ok" : "warn" }, `${when(d.at_s)} (${ended ? (ok ? "met" : "missed") : ok ? "on time" : "late"})`);
}

interface Page<T> { jobs: T[]; next_after: number | null }

// The newest jobs, up to want (pages of at most 1000, the API's most), and
// whether older ones remain.
async function newest(want: number): Promise<{ jobs: Job[]; more: boolean }> {
  const jobs: Job[] = [];
  let after: number | null = null;
  do {
    const r: Page<Job> = await get<Page<Job>>(`/v1/jobs?order=newest&limit=${Math.min(1000, want + 1 - jobs.length)}${after ? "&after=" + after : ""}`);
    jobs.push(...r.jobs);
    after = r.next_after;
  } while (after !== null && jobs.length <= want);
  return { jobs: jobs.slice(0, want), more: jobs.length > want };
}

const PAGE = 200;

export function jobsPage(root: HTMLElement, ctx: Ctx): () => void {
  const body = h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "jobs" });
  const err = h("p", { class: "error", role: "alert" });
  const more = h("p", { id: "jobs-more", class: "muted" });
  clear(root, h("h1", null, "Jobs"), ctx.can("user") ? h("p", null, h("a", { href: "#/plan" }, "Plan and submit a job")) : null, err, body, more);
  let want = PAGE;
  async function load(): Promise<void> {
    try {
      const { jobs, more: older } = await newest(want);
      const now = Date.now() / 1000;
      const t = table(["job", "name", "state", "progress", "predicted end", "deadline"],
        jobs.map((j) => [h("a", { href: "#/jobs/" + j.id }, "#" + j.id), j.name || "", h("span", { class: "state-" + j.state }, j.state), progress(j, now), when(j.ended_s || j.predicted_end_s), deadlineCell(j)]),
        older ? `Jobs: the newest ${jobs.length} (older ones not shown)` : `Jobs (${jobs.length})`);
      t.id = "jobs";
      keepFocus(root, () => {
        clear(body, jobs.length ? t : h("p", { class: "muted" }, "No job yet."));
        clear(more, older ? [`The newest ${jobs.length} jobs are shown. `, h("button", { type: "button", id: "more-jobs", class: "link", onclick: () => { want += PAGE; poll.now(); } }, `Show ${PAGE} older jobs`)] : null);
      });
      err.textContent = "";
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      err.textContent = (e as Error).message;
    }
  }
  const poll = poller(load, 3000);
  return poll.stop;
}

interface Step { step: number; loss: number; accuracy: number; lr: number; rank_step_s: number[]; step_s: number; elapsed_s: number; local_batches: number[] }
interface Results { energy_j?: number | null; energy_basis?: string; stop_reason?: string | null }
interface TrainEvent { event: string; at_step: number }

export function jobPage(root: HTMLElement, ctx: Ctx, arg: string): () => void {
  const id = Number(arg);
  const head = h("div");
  const facts = h("dl", { class: "facts", id: "job-facts" });
  const charts = h("div", { class: "charts" });
  const logEl = h("pre", { id: "log", class: "log", role: "log", tabindex: 0, "aria-label": "rank 0's log, its last lines" });
  const err = h("p", { class: "error", role: "alert" });
  clear(root, head, err, facts, charts, h("h2", null, "Log (rank 0, tail)"), logEl);
  const steps: Step[] = [];
  const resplits: number[] = [];
  const evals: { at_step: number; test_accuracy: number; test_loss: number }[] = [];
  let offset = 0;
  let logSize = 0;
  let logNote = ""; // why there is no log to show (a Kubernetes job's is its pods')
  let results: Results | null = null;
  let job: Job | null = null;
  const plots: { u: uPlot; stop: () => void }[] = [];
  let built = false;
  let stopped = false;
  let headKey = "";
  let removeArmed = false; // Remove asks once more before it removes

  function build(): void {
    const mk = (title: string) => {
      const el = h("div", { class: "chart", role: "img", "aria-label": title });
      charts.append(h("section", null, h("h2", null, title), el));
      return el;
    };
    const specs: [string, Parameters<typeof lines>[3], Parameters<typeof lines>[4], (() => number[]) | undefined][] = [
      ["Loss and accuracy", [{ label: "loss", scale: "loss" }, { label: "accuracy", scale: "acc" }], [{ scale: "loss", label: "loss" }, { scale: "acc", label: "accuracy", side: 1 }], undefined],
      ["Learning rate", [{ label: "lr", scale: "lr" }], [{ scale: "lr", label: "learning rate" }], undefined],
      ["Step time per rank (re-splits dashed)", [], [{ scale: "s", label: "compute time (s)" }], () => resplits],
      ["Predicted against measured step time", [{ label: "measured", scale: "s" }, { label: "predicted", scale: "s", dash: [6, 4] }], [{ scale: "s", label: "step time (s)" }], undefined],
    ];
    const ranks = steps.length ? steps[0].rank_step_s.length : 1;
    specs[2][1] = Array.from({ length: ranks }, (_, r) => ({ label: "rank " + r, scale: "s" }));
    for (const [title, series, axes, marks] of specs) {
      const el = mk(title);
      const u = lines(el, "", "step", series, axes, 200, marks);
      plots.push({ u, stop: follow(u, el, 200) });
    }
    built = true;
  }

  function redraw(): void {
    if (!steps.length) return;
    if (!built) build();
    const x = steps.map((s) => s.step);
    const pred = job?.plan?.choice?.step_time_s ?? job?.plan?.predicted_step_time_s ?? null;
    const ranks = steps[0].rank_step_s.length;
    plots[0].u.setData([x, steps.map((s) => s.loss), steps.map((s) => s.accuracy)]);
    plots[1].u.setData([x, steps.map((s) => s.lr)]);
    plots[2].u.setData([x, ...Array.from({ length: ranks }, (_, r) => steps.map((s) => s.rank_step_s[r] ?? null))] as uPlot.AlignedData);
    plots[3].u.setData([x, steps.map((s) => s.step_s), steps.map(() => pred)] as uPlot.AlignedData);
  }

  // The metrics from offset to the file's end as the server saw it
  // (X-Size), whole lines only, CHUNK bytes a request.
  async function readMetrics(): Promise<void> {
    for (;;) {
      const m = await getRaw(`/v1/jobs/${id}/metrics?offset=${offset}&limit=${CHUNK}`);
      if (stopped) return;
      const end = m.text.lastIndexOf("\n") + 1;
      for (const line of m.text.slice(0, end).split("\n")) {
        if (!line) continue;
        let o: Step | TrainEvent;
        try {
          o = JSON.parse(line) as Step | TrainEvent;
        } catch {
          continue; // not the trainer's: skipped, not read again
        }
        if ("step" in o) steps.push(o);
        else if (o.event === "rebalance") resplits.push(o.at_step);
        else if (o.event === "eval") evals.push(o as TrainEvent & { test_accuracy: number; test_loss: number });
      }
      const n = new TextEncoder().encode(m.text.slice(0, end)).length;
      offset += n;
      if (!n || offset >= m.size) return;
    }
  }

  // Rank 0's log, its last TAIL bytes: from where its end was at the last
  // look, or, when it grew by more than that (or at the first look of a
  // long log), from its end as now said (X-Size).
  async function readLog(): Promise<void> {
    let at = Math.max(0, logSize - TAIL);
    let lg = await getRaw(`/v1/jobs/${id}/logs?rank=0&offset=${at}&limit=${2 * TAIL}`);
    if (lg.size > at + 2 * TAIL || lg.size < at) {
      at = Math.max(0, lg.size - TAIL);
      lg = await getRaw(`/v1/jobs/${id}/logs?rank=0&offset=${at}&limit=${2 * TAIL}`);
    }
    if (stopped) return;
    logSize = lg.size;
    // from the first whole line
    const text = at > 0 ? lg.text.slice(lg.text.indexOf("\n") + 1) : lg.text;
    const tail = text.split("\n").slice(-40).join("\n");
    if (logEl.textContent !== tail) logEl.textContent = tail;
  }

  // One look: the job, then (launched) its new metrics, the log's tail and
  // (succeeded) its results.  An error is shown and the next look tries
  // again; once the job has ended and all of it was read, no more looks.
  async function poll(): Promise<boolean> {
    let j: Job;
    try {
      j = job = await get<Job>("/v1/jobs/" + id);
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      if (!stopped) err.textContent = (e as Error).message;
      return !stopped;
    }
    if (stopped) return false;
    let failed: string | null = null;
    const note = (e: unknown) => {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      failed = failed ?? (e as Error).message;
    };
    if (j.deployment) {
      try {
        await readMetrics();
      } catch (e) {
        // 409: not launched after all (the next look has it)
        if (!(e instanceof ApiError) || e.problem.status !== 409) note(e);
      }
      if (!logNote && !stopped) {
        try {
          await readLog();
        } catch (e) {
          if (e instanceof ApiError && e.problem.type?.endsWith("logs-in-pods")) logEl.textContent = logNote = e.message;
          else if (!(e instanceof ApiError) || e.problem.status !== 409) note(e);
        }
      }
      if (j.state === "succeeded" && !results && !stopped) {
        try {
          results = await get<Results>(`/v1/jobs/${id}/results`);
        } catch (e) {
          if (e instanceof ApiError && e.problem.status === 404) results = {}; // it ended without any
          else note(e);
        }
      }
    }
    if (stopped) return false;
    err.textContent = failed ?? "";
    show(j);
    return LIVE.includes(j.state) || failed !== null;
  }

  function show(j: Job): void {
    const c = j.plan?.choice;
    const predStep = c?.step_time_s ?? j.plan?.predicted_step_time_s ?? null;
    const totalSteps = c?.steps ?? j.plan?.steps;
    const mine = ctx.can("admin") || (ctx.can("user") && j.owner === ctx.who.token_id);
    const mayCancel = LIVE.includes(j.state) && mine;
    // an ended job goes, with its files, on a second click
    const mayRemove = !LIVE.includes(j.state) && mine;
    // the head (with Cancel) only when it changed: the keyboard's place stays
    const key = JSON.stringify([j.id, j.name, j.state, j.cancel_requested, j.reason, mayCancel, mayRemove, removeArmed, !!j.description?.training?.lr_range]);
    if (key !== headKey) {
      headKey = key;
      keepFocus(head, () => clear(head, h("h1", null, `Job #${j.id}${j.name ? " " + j.name : ""}`),
        h("p", null, h("span", { id: "job-state", class: "state-" + j.state }, j.state), j.cancel_requested && LIVE.includes(j.state) ? " (cancel requested)" : "", j.reason ? " - " + j.reason : ""),
        j.description?.training?.lr_range ? h("p", null, "A learning-rate range test: ", h("a", { href: "#/lr-find/" + j.id, id: "lr-find-link" }, "its loss against the rate, the fits and the suggested rate")) : null,
        mayCancel ? h("button", { type: "button", id: "cancel", class: "danger", disabled: j.cancel_requested, onclick: cancel }, "Cancel job") : null,
        mayRemove ? h("button", { type: "button", id: "remove", class: "danger", onclick: remove },
          removeArmed ? "Remove it and its logs, metrics, checkpoint and results: click again" : "Remove job") : null));
    }
    const lastStep = steps[steps.length - 1];
    const energySoFar = results?.energy_j != null
      ? `${energy(results.energy_j)} (${results.energy_basis || "basis not given"})`
      : c && lastStep
        ? `${energy(c.power_w * lastStep.elapsed_s)} (predicted power × elapsed time; not measured)`
        : lastStep ? "not measured (no power figure for these devices)" : "-";
    clear(facts,
      h("dt", null, "Devices"), h("dd", null, j.devices.map((d) => `${d.type}#${d.index} on ${d.node}`).join(", ") || "-"),
      h("dt", null, "Steps"), h("dd", { id: "steps-done" }, lastStep ? `${lastStep.step} of ${totalSteps ?? "?"}` : "0"),
      h("dt", null, "Started"), h("dd", null, when(j.started_s)),
      h("dt", null, j.ended_s ? "Ended" : "Predicted end"), h("dd", null, when(j.ended_s || j.predicted_end_s)),
      h("dt", null, "Deadline"), h("dd", { id: "job-deadline" }, deadlineCell(j)),
      evals.length ? [h("dt", null, "Test accuracy"), h("dd", null, `${(100 * evals[evals.length - 1].test_accuracy).toFixed(1)}% (loss ${evals[evals.length - 1].test_loss.toFixed(3)}, after step ${evals[evals.length - 1].at_step})`)] : null,
      h("dt", null, "Balance"), h("dd", { id: "balance" }, balance(steps, resplits.length)),
      h("dt", null, "Step time"), h("dd", null, `measured ${lastStep ? dur(median(steps.slice(-50).map((s) => s.step_s))) : "-"} (median of the last 50), predicted ${dur(predStep)}`),
      h("dt", null, j.ended_s ? "Energy" : "Energy so far"), h("dd", { id: "energy" }, energySoFar),
      h("dt", null, "Predicted energy"), h("dd", null, energy(c?.predicted_energy_j)));
    redraw();
  }

  async function cancel(): Promise<void> {
    try {
      await send("POST", `/v1/jobs/${id}/cancel`);
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      err.textContent = (e as Error).message;
    }
    await looks.now();
  }

  async function remove(): Promise<void> {
    if (!removeArmed) {
      removeArmed = true;
      await looks.now();
      return;
    }
    try {
      await send("DELETE", `/v1/jobs/${id}`);
      stopped = true;
      location.hash = "#/jobs";
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      removeArmed = false;
      err.textContent = (e as Error).message;
      await looks.now();
    }
  }

  const looks = poller(poll, 2000);
  return () => {
    stopped = true;
    looks.stop();
    for (const p of plots) p.stop();
  };
}

function median(a: number[]): number {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
}

// The ranks' balance over the last 20 steps: their local batches, how far
// the slowest rank's median compute time is above the fastest's, and the
// re-splits so far.
function balance(steps: Step[], resplits: number): string {
  if (!steps.length) return "-";
  const last = steps.slice(-20);
  const ranks = last[last.length - 1].rank_step_s.length;
  const lb = last[last.length - 1].local_batches;
  if (ranks < 2) return `one rank (local batch ${lb?.[0] ?? "?"})`;
  const med = Array.from({ length: ranks }, (_, r) => median(last.map((s) => s.rank_step_s[r])));
  const spread = Math.max(...med) / Math.min(...med) - 1;
  return `local batches ${lb.join(", ")}; the slowest rank ${(100 * spread).toFixed(0)}% above the fastest; ${resplits} re-split${resplits === 1 ? "" : "s"}`;
}
