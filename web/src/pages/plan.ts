// plan.ts - Plan a job: a stored model (or one uploaded here), samples,
// epochs, batch, deadline and optional constraints; the recommendation
// is asked again (debounced) whenever a field changes and shown as the
// chosen devices, local batches, gradient weights and learning-rate
// scale, the time-energy front on a plot, and the other types'
// alternatives with why they lost.  A field the API refuses gets the
// API's message beside it, and nothing is submitted.  Submitting (users
// and admins) posts the same description to /v1/jobs.
import { ApiError, Problem, get, getEarly, send, upload } from "../api";
import { clear, dur, energy, h, table } from "../dom";
import type { Ctx } from "../main";
import { FrontPoint, follow, frontPlot } from "../plot";

interface Dev { node: string; type: string; count: number; local_batch: number; grad_weight: number }
export interface Config {
  devices: Dev[]; types: { type: string; count: number; step_time_s: number }[];
  device_count: number; nodes: number; global_batch: number; lr_scale: number; steps: number;
  step_time_s: number; predicted_time_s: number; predicted_time_interval_s?: [number, number];
  predicted_energy_j: number; predicted_energy_interval_j?: [number, number]; power_w: number; meets_deadline: boolean;
  what?: string; reason?: string;
}
export interface Rec {
  feasible: boolean; reason: string | null; deadline_s: number; steps: number;
  choice: Config | null; pareto: Config[]; pareto_exact: boolean; rejected: Config[]; notes: string[];
}

function pad2(n: number): string {
  return String(n).padStart(2, "0");
}

function localInput(d: Date): string {
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}T${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
}

export function configLabel(c: Config): string {
  return c.devices.map((d) => `${d.count}× ${d.type} on ${d.node} (local batch ${d.local_batch}, weight ${d.grad_weight.toFixed(3)})`).join("; ");
}

// A model's name from its file's: what the API takes for a name (1 to 63
// letters, digits, '.', '_' or '-'), every run of other characters as one
// '-' ("fmnist-cnn (1).json" is fmnist-cnn-1), never empty.
export function modelName(file: string): string {
  const n = file.replace(/\.(onnx|json)$/i, "").replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 63).replace(/-+$/, "");
  return n || "model";
}

// A number when the text is one, else the text itself, so that the API
// says what is wrong with it.
function num(v: string): number | string {
  const t = v.trim();
  return t !== "" && isFinite(Number(t)) ? Number(t) : t;
}

export function planPage(root: HTMLElement, ctx: Ctx): () => void {
  const field = (id: string, label: string, input: HTMLInputElement | HTMLSelectElement, help?: string) => {
    input.id = id;
    input.setAttribute("aria-describedby", `${id}-err${help ? ` ${id}-help` : ""}`);
    return h("div", { class: "field" },
      h("label", { for: id }, label), input,
      help ? h("small", { id: `${id}-help`, class: "muted" }, help) : null,
      h("span", { class: "field-error", id: `${id}-err`, role: "alert" }));
  };
  const model = h("select", { name: "model" });
  const file = h("input", { type: "file", accept: ".onnx,.json" });
  const samples = h("input", { type: "text", inputmode: "numeric", value: "60000" });
  const epochs = h("input", { type: "text", inputmode: "numeric", value: "1" });
  const batch = h("input", { type: "text", inputmode: "numeric", value: "256" });
  const deadline = h("input", { type: "datetime-local", value: localInput(new Date(Date.now() + 3600e3)) });
  const dtype = h("select", null, h("option", { value: "" }, "any"));
  const maxDev = h("input", { type: "text", inputmode: "numeric", value: "" });
  const maxNodes = h("input", { type: "text", inputmode: "numeric", value: "" });
  const data = h("select", null, h("option", { value: "fashion-mnist" }, "fashion-mnist"), h("option", { value: "synthetic" }, "synthetic"));
  const name = h("input", { type: "text", value: "" });
  const lr = h("input", { type: "text", inputmode: "decimal", value: "0.05" });
  const maxSec = h("input", { type: "text", inputmode: "numeric", value: "" });
  const stall = h("input", { type: "text", inputmode: "numeric", value: "" });
  const ranks = h("input", { type: "text", inputmode: "numeric", value: "" });
  const lrMin = h("input", { type: "text", inputmode: "decimal", value: "" });
  const lrMax = h("input", { type: "text", inputmode: "decimal", value: "" });
  const submit = h("button", { type: "submit", id: "submit", disabled: true }, "Submit job");
  const formErr = h("p", { class: "error", role: "alert", id: "form-error" });
  const result = h("section", { id: "result", "aria-live": "polite", "aria-labelledby": "rec-h" });
  const fields: Record<string, HTMLElement> = {
    model_id: model, samples, epochs, batch, deadline_s: deadline, "constraints.device_type": dtype,
    "constraints.devices": maxDev, "constraints.nodes": maxNodes, data, name, "training.lr": lr, "training.max_seconds": maxSec,
    "training.stall_timeout_s": stall, "training.ranks": ranks,
    "training.lr_range.lr_min": lrMin, "training.lr_range.lr_max": lrMax,
  };
  const form = h("form", { id: "plan-form", novalidate: true },
    h("fieldset", null, h("legend", null, "Model"),
      field("model", "Stored model", model),
      ctx.can("user") ? field("file", "or upload a model (ONNX, or a hetpool spec .json)", file) : null),
    h("fieldset", null, h("legend", null, "Job"),
      field("samples", "Samples", samples), field("epochs", "Epochs", epochs), field("batch", "Global batch", batch),
      field("deadline", "Deadline (finish by)", deadline)),
    h("fieldset", null, h("legend", null, "Constraints (optional)"),
      field("dtype", "Device type", dtype), field("maxdev", "At most devices", maxDev), field("maxnodes", "At most nodes", maxNodes)),
    ctx.can("user")
      ? h("fieldset", null, h("legend", null, "Run"),
          field("data", "Data", data), field("name", "Name (optional)", name), field("lr", "Learning rate", lr),
          field("maxsec", "Stop after (s, optional)", maxSec, "training time budget"),
          field("stall", "Stall limit (s, optional)", stall, "end the job when no step completes for this long (a rank stopped or hung); default: the trainer's, 10 minutes or more"),
          field("ranks", "Ranks (optional)", ranks, "processes for a CPU job; default: the plan's"),
          field("lrmin", "Range test: lowest rate (optional)", lrMin, "with the highest rate, run a learning-rate range test instead of training (the learning rate above is then not used)"),
          field("lrmax", "Range test: highest rate (optional)", lrMax, "at least 10 times the lowest"), submit)
      : h("p", { class: "muted" }, "Your token is a reader's: you can plan, not submit."),
    formErr);
  clear(root, h("h1", null, "Plan a job"), h("div", { class: "plan" }, form, result));

  let seq = 0;
  let timer = 0;
  let last: Rec | null = null;
  let cleanup: (() => void) | null = null;

  function clearErrors(): void {
    for (const el of root.querySelectorAll(".field-error")) el.textContent = "";
    for (const el of root.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    formErr.textContent = "";
  }

  function showProblem(p: Problem, fallback?: HTMLElement): void {
    const el = (p.field && fields[p.field]) || fallback;
    const msg = p.detail || p.title || "HTTP " + p.status;
    if (el) {
      el.setAttribute("aria-invalid", "true");
      document.getElementById(el.id + "-err")!.textContent = msg;
    } else {
      formErr.textContent = msg;
    }
  }

  function description(): Record<string, unknown> {
    const d: Record<string, unknown> = {
      model_id: num(model.value),
      samples: num(samples.value),
      epochs: num(epochs.value),
      batch: num(batch.value),
      deadline_s: deadline.value ? Math.round((new Date(deadline.value).getTime() - Date.now()) / 1000) : "",
      front: 8,
    };
    const c: Record<string, unknown> = {};
    if (dtype.value) c.device_type = dtype.value;
    if (maxDev.value.trim()) c.devices = num(maxDev.value);
    if (maxNodes.value.trim()) c.nodes = num(maxNodes.value);
    if (Object.keys(c).length) d.constraints = c;
    return d;
  }

  async function recommend(): Promise<void> {
    const my = ++seq;
    clearErrors();
    submit.disabled = true;
    if (!model.value) {
      clear(result, h("p", { class: "muted" }, "Pick a stored model or upload one."));
      return;
    }
    try {
      const r = await send<Rec>("POST", "/v1/recommendations", description());
      if (my !== seq) return;
      last = r;
      show(r);
      submit.disabled = !r.feasible && !r.choice;
    } catch (e) {
      if (my !== seq) return;
      last = null;
      if (e instanceof ApiError) {
        if (e.problem.status === 401) throw e;
        showProblem(e.problem);
      } else formErr.textContent = String(e);
      clear(result);
    }
  }

  function show(r: Rec): void {
    if (cleanup) cleanup();
    cleanup = null;
    const c = r.choice;
    const plotEl = h("div", { class: "chart", id: "front-plot", role: "img", "aria-label": "predicted time against predicted energy of the time-energy front; the table below lists the same points" });
    const hover = h("p", { id: "hover", class: "hover", "aria-live": "off" }, "Hover a point to see its configuration.");
    const pt = (x: Config): FrontPoint => ({ t: x.predicted_time_s, e: x.predicted_energy_j, ti: x.predicted_time_interval_s, ei: x.predicted_energy_interval_j, label: (x.what ? x.what + ": " : "") + configLabel(x) + ` - ${dur(x.predicted_time_s)}, ${energy(x.predicted_energy_j)}` });
    const alts = r.rejected.filter((x) => x.devices && x.predicted_time_s !== undefined);
    clear(result,
      h("h2", { id: "rec-h" }, "Recommendation"),
      h("p", { id: "verdict", class: r.feasible ? "ok" : "warn" }, r.feasible ? "Meets the deadline." : "Cannot meet the deadline: " + (r.reason || "")),
      c ? h("dl", { class: "facts" },
        h("dt", null, "Predicted time"), h("dd", { id: "pred-time" }, dur(c.predicted_time_s), c.predicted_time_interval_s ? ` (${dur(c.predicted_time_interval_s[0])} - ${dur(c.predicted_time_interval_s[1])})` : ""),
        h("dt", null, "Predicted energy"), h("dd", null, energy(c.predicted_energy_j), c.predicted_energy_interval_j ? ` (${energy(c.predicted_energy_interval_j[0])} - ${energy(c.predicted_energy_interval_j[1])})` : ""),
        h("dt", null, "Devices, nodes"), h("dd", null, `${c.device_count} on ${c.nodes} node${c.nodes > 1 ? "s" : ""}`),
        h("dt", null, "Global batch, steps"), h("dd", null, `${c.global_batch}, ${c.steps} steps of ${dur(c.step_time_s)}`),
        h("dt", null, "Learning-rate scale"), h("dd", { id: "lr-scale" }, String(c.lr_scale))) : null,
      c ? Object.assign(table(["node", "type", "count", "local batch", "gradient weight"], c.devices.map((d) => [d.node, d.type, d.count, d.local_batch, d.grad_weight.toFixed(4)]), "Chosen devices"), { id: "chosen" }) : null,
      h("h3", null, "Time-energy front"),
      plotEl, hover,
      h("details", null, h("summary", null, "The front as a table"),
        table(["predicted time", "predicted energy", "configuration"], r.pareto.map((x) => [dur(x.predicted_time_s), energy(x.predicted_energy_j), configLabel(x)]), `Front (${r.pareto_exact ? "exact" : "from the search"})`)),
      h("h3", null, "Alternatives"),
      table(["type", "time", "energy", "why not"], r.rejected.map((x) => [x.what || "", x.predicted_time_s !== undefined ? dur(x.predicted_time_s) : "-", x.predicted_energy_j !== undefined ? energy(x.predicted_energy_j) : "-", x.reason || ""]), "Other types and why they lost"),
      r.notes.length ? h("ul", { class: "notes" }, r.notes.map((n) => h("li", null, n))) : null);
    if (r.pareto.length || c) {
      const u = frontPlot(plotEl, r.pareto.map(pt), alts.map(pt), c ? pt(c) : null, r.deadline_s, (p) => {
        hover.textContent = p ? p.label : "Hover a point to see its configuration.";
      });
      cleanup = follow(u, plotEl, 300);
    }
  }

  function schedule(): void {
    clearTimeout(timer);
    timer = window.setTimeout(recommend, 300);
  }

  async function uploadModel(): Promise<void> {
    const f = file.files && file.files[0];
    if (!f) return;
    clearErrors();
    try {
      const label = modelName(f.name);
      let m: { id: number; name: string };
      if (/\.json$/i.test(f.name)) {
        // The spec as it is, inside the request: a broken file gets the
        // server's JSON message.
        const text = await f.text();
        m = await upload("/v1/models", new Blob([`{"name":${JSON.stringify(label)},"spec":${text}}`]), "application/json");
      } else {
        m = await upload(`/v1/models?name=${encodeURIComponent(label)}`, f, "application/octet-stream");
      }
      model.append(h("option", { value: m.id }, `${m.name} (#${m.id})`));
      model.value = String(m.id);
      file.value = "";
      schedule();
    } catch (e) {
      if (e instanceof ApiError) showProblem({ ...e.problem, field: undefined }, file);
      else formErr.textContent = String(e);
    }
  }

  async function submitJob(ev: Event): Promise<void> {
    ev.preventDefault();
    if (!ctx.can("user") || !last) return;
    const body = description();
    delete body.front;
    body.data = data.value;
    if (name.value.trim()) body.name = name.value.trim();
    const t: Record<string, unknown> = {};
    const range = lrMin.value.trim() || lrMax.value.trim();
    if (lr.value.trim() && !range) t.lr = num(lr.value);
    if (range) {
      const r: Record<string, unknown> = {};
      if (lrMin.value.trim()) r.lr_min = num(lrMin.value);
      if (lrMax.value.trim()) r.lr_max = num(lrMax.value);
      t.lr_range = r;
    }
    if (maxSec.value.trim()) t.max_seconds = num(maxSec.value);
    if (stall.value.trim()) t.stall_timeout_s = num(stall.value);
    if (ranks.value.trim()) t.ranks = num(ranks.value);
    if (Object.keys(t).length) body.training = t;
    clearErrors();
    submit.disabled = true;
    try {
      const j = await send<{ id: number }>("POST", "/v1/jobs", body);
      location.hash = "#/jobs/" + j.id;
    } catch (e) {
      submit.disabled = false;
      if (e instanceof ApiError) showProblem(e.problem);
      else formErr.textContent = String(e);
    }
  }

  // only what the recommendation depends on asks again
  const recInputs: EventTarget[] = [model, samples, epochs, batch, deadline, dtype, maxDev, maxNodes];
  form.addEventListener("input", (ev) => {
    if (ev.target && recInputs.includes(ev.target)) schedule();
  });
  form.addEventListener("submit", submitJob);
  file.addEventListener("change", uploadModel);

  (async () => {
    // the first recommendation needs only the models: the device types
    // and the datasets come in meanwhile
    const nodesP = get<{ nodes: { devices: { type: string }[] }[] }>("/v1/nodes");
    const dsP = get<{ datasets: { name: string }[] }>("/v1/datasets");
    try {
      const models = await getEarly<{ models: { id: number; name: string }[] }>("/v1/models");
      model.append(h("option", { value: "" }, models.models.length ? "choose a model" : "no stored model yet"),
        ...models.models.map((m) => h("option", { value: m.id }, `${m.name} (#${m.id})`)));
      if (models.models.length) model.value = String(models.models[models.models.length - 1].id);
      recommend();
      const [nodes, ds] = await Promise.all([nodesP, dsP]);
      const types = [...new Set(nodes.nodes.flatMap((n) => n.devices.map((d) => d.type)))].sort();
      dtype.append(...types.map((t) => h("option", { value: t }, t)));
      data.append(...(ds.datasets || []).map((d) => h("option", { value: d.name }, d.name)));
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      formErr.textContent = (e as Error).message;
    }
  })();

  return () => {
    clearTimeout(timer);
    seq++;
    if (cleanup) cleanup();
  };
}
