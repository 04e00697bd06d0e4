// dom.ts - a small element builder, so that no page writes HTML strings
// (text always goes through textContent: nothing from the server is
// parsed as markup).

type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;
type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...kids: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === "function") e.addEventListener(k.replace(/^on/, ""), v);
    else if (v === true) e.setAttribute(k, "");
    else e.setAttribute(k, String(v));
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(typeof k === "object" ? k : String(k));
  }
  return e;
}

export function clear(e: Element, ...kids: (Child | Child[])[]): void {
  e.replaceChildren();
  for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false) e.append(typeof k === "object" ? k : String(k));
}

export function table(head: string[], rows: Child[][], caption?: string): HTMLTableElement {
  return h("table", null, caption ? h("caption", null, caption) : null, h("thead", null, h("tr", null, head.map((c) => h("th", { scope: "col" }, c)))), h("tbody", null, rows.map((r) => h("tr", null, r.map((c) => h("td", null, c))))));
}

// Numbers for people: seconds as h/min/s, joules as kJ/MJ/kWh.
export function dur(s: number | null | undefined): string {
  if (s === null || s === undefined || !isFinite(s)) return "-";
  const a = Math.abs(s);
  if (a < 1) return (s * 1000).toPrecision(3) + " ms";
  if (a < 120) return s.toPrecision(3) + " s";
  if (a < 7200) return (s / 60).toPrecision(3) + " min";
  return (s / 3600).toPrecision(3) + " h";
}

export function energy(j: number | null | undefined): string {
  if (j === null || j === undefined || !isFinite(j)) return "-";
  if (j < 1e3) return j.toPrecision(3) + " J";
  if (j < 1e6) return (j / 1e3).toPrecision(3) + " kJ";
  if (j < 3.6e7) return (j / 1e6).toPrecision(3) + " MJ";
  return (j / 3.6e6).toPrecision(3) + " kWh";
}

export function when(t: number | null | undefined): string {
  if (!t) return "-";
  return new Date(t * 1000).toLocaleString();
}

export function errorBox(msg: string): HTMLElement {
  return h("p", { class: "error", role: "alert" }, msg);
}
