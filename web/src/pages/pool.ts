// pool.ts - the Pool page: every node with its devices by type (free,
// allocated to which job, drained, reserved) and its network, totals by
// type, this host's own node first; drain and resume for admins.
// Refreshed 5 s after the last look; redrawn only when something changed.
import { ApiError, get, send } from "../api";
import { clear, h, keepFocus, table } from "../dom";
import type { Ctx } from "../main";
import { poller } from "../poll";

interface Device { type: string; index: number; state: string; job: number | null }
interface Node {
  name: string; state: string; self: boolean;
  devices: { type: string; count: number; free: number }[];
  device_list: Device[];
  net_bw_gbps?: number; net_transport?: string;
}

// The node's link as the recommender reads it: its rate and its transport,
// "auto" shown with what it means for this node (socket with a GPU, tcp
// without).
function netCell(n: Node): string {
  const gpu = n.device_list.some((d) => d.type !== "cpu" && !d.type.startsWith("cpu-"));
  const t = n.net_transport || "auto";
  const rate = typeof n.net_bw_gbps === "number" ? `${n.net_bw_gbps} Gbit/s` : "rate not known";
  return `${rate}, ${t === "auto" ? `auto (${gpu ? "socket" : "tcp"})` : t}`;
}

function byType(devs: Device[]): Map<string, { total: number; free: number; drained: number; reserved: number; jobs: Map<number, number> }> {
  const m = new Map<string, { total: number; free: number; drained: number; reserved: number; jobs: Map<number, number> }>();
  for (const d of devs) {
    let t = m.get(d.type);
    if (!t) m.set(d.type, (t = { total: 0, free: 0, drained: 0, reserved: 0, jobs: new Map() }));
    t.total++;
    if (d.state === "free") t.free++;
    else if (d.state === "drained") t.drained++;
    else if (d.state === "reserved") t.reserved++;
    if (d.job) t.jobs.set(d.job, (t.jobs.get(d.job) || 0) + 1);
  }
  return m;
}

function devCell(n: Node): HTMLElement {
  const ul = h("ul", { class: "devs" });
  for (const [type, t] of byType(n.device_list)) {
    const jobs = [...t.jobs].map(([id, k]) => h("a", { href: "#/jobs/" + id }, `${k} on job ${id}`));
    ul.append(h("li", null, h("strong", null, `${t.total}× ${type}`), ": ",
      h("span", { class: "free" }, `${t.free} free`),
      jobs.length ? [", ", ...jobs.flatMap((a, i) => (i ? [", ", a] : [a]))] : null,
      t.drained ? `, ${t.drained} drained` : null,
      t.reserved ? `, ${t.reserved} reserved` : null));
  }
  return ul;
}

export function poolPage(root: HTMLElement, ctx: Ctx): () => void {
  const status = h("p", { class: "error", role: "alert" });
  const body = h("div");
  clear(root, h("h1", null, "Pool"), status, body);
  let last = "";

  async function load(): Promise<void> {
    let nodes: Node[];
    try {
      nodes = (await get<{ nodes: Node[] }>("/v1/nodes")).nodes;
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      status.textContent = String((e as Error).message);
      return;
    }
    status.textContent = "";
    // the same pool as at the last look: nothing to redraw (the keyboard's
    // place and the tables' scroll stay)
    const key = JSON.stringify(nodes);
    if (key === last) return;
    last = key;
    const all = nodes.flatMap((n) => n.device_list);
    const tot = byType(all);
    const totals = table(["type", "devices", "free", "allocated", "drained", "reserved"],
      [...tot].sort((a, b) => a[0].localeCompare(b[0])).map(([type, t]) => [type, t.total, t.free, t.total - t.free - t.drained - t.reserved, t.drained, t.reserved]),
      "Devices by type");
    totals.id = "totals";
    const self = nodes.filter((n) => n.self);
    const row = (n: Node) => [
      h("span", null, n.name, n.self ? h("span", { class: "badge" }, "this host") : null),
      h("span", { class: "state-" + n.state }, n.state),
      devCell(n),
      netCell(n),
      ctx.can("admin")
        ? h("button", { type: "button", "data-node": n.name, "aria-label": `${n.state === "drained" ? "Resume" : "Drain"} node ${n.name}`, onclick: () => drain(n) }, n.state === "drained" ? "Resume" : "Drain")
        : null,
    ];
    const nodesT = table(["node", "state", "devices", "network", ctx.can("admin") ? "action" : ""], nodes.map(row), `Nodes (${nodes.length})`);
    nodesT.id = "nodes";
    keepFocus(body, () => clear(body,
      self.length ? h("section", { "aria-labelledby": "self-h" }, h("h2", { id: "self-h" }, "This host"), ...self.map((n) => devCell(n))) : null,
      h("section", { "aria-labelledby": "tot-h" }, h("h2", { id: "tot-h" }, "Totals"), h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "totals by type" }, totals)),
      h("section", { "aria-labelledby": "nodes-h" }, h("h2", { id: "nodes-h" }, "Nodes"), h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "nodes" }, nodesT))));
  }

  async function drain(n: Node): Promise<void> {
    try {
      await send("PATCH", "/v1/nodes/" + encodeURIComponent(n.name), { state: n.state === "drained" ? "active" : "drained" });
    } catch (e) {
      if (e instanceof ApiError && e.problem.status === 401) throw e;
      status.textContent = (e as Error).message;
      return;
    }
    await looks.now();
  }

  const looks = poller(load, 5000);
  return looks.stop;
}
