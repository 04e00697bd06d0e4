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

// Numbers for people: seconds as ms/s/min/h/d/y, joules as
// J/kJ/MJ/kWh/MWh/GWh, three significant digits and never an exponent
// (999.7 is "1000", not "1.00e+3").
function num3(x: number): string {
  return Math.abs(x) >= 999.5 ? String(Math.round(x)) : x.toPrecision(3);
}

export function dur(s: number | null | undefined): string {
  if (s === null || s === undefined || !isFinite(s)) return "-";
  const a = Math.abs(s);
  if (a < 1) return num3(s * 1000) + " ms";
  if (a < 120) return num3(s) + " s";
  if (a < 7200) return num3(s / 60) + " min";
  if (a < 172800) return num3(s / 3600) + " h";
  if (a < 730 * 86400) return num3(s / 86400) + " d";
  return num3(s / (365.25 * 86400)) + " y";
}

export function energy(j: number | null | undefined): string {
  if (j === null || j === undefined || !isFinite(j)) return "-";
  if (j < 1e3) return num3(j) + " J";
  if (j < 1e6) return num3(j / 1e3) + " kJ";
  if (j < 3.6e7) return num3(j / 1e6) + " MJ";
  if (j < 3.6e9) return num3(j / 3.6e6) + " kWh";
  if (j < 3.6e12) return num3(j / 3.6e9) + " MWh";
  return num3(j / 3.6e12) + " GWh";
}

export function when(t: number | null | undefined): string {
  if (!t) return "-";
  return new Date(t * 1000).toLocaleString();
}

export function errorBox(msg: string): HTMLElement {
  return h("p", { class: "error", role: "alert" }, msg);
}

// Rebuild part of a page without losing the keyboard's place: the element
// that had the focus inside el is found again after rebuild() by its id,
// data-node, href or aria-label, and focused again (a refresh every few
// seconds would otherwise send the focus back to the top of the page).
export function keepFocus(el: Element, rebuild: () => void): void {
  const a = document.activeElement;
  const key = a && a !== document.body && el.contains(a) ? focusKey(a) : null;
  rebuild();
  if (!key || (document.activeElement && document.activeElement !== document.body && el.contains(document.activeElement))) return;
  const t = el.querySelector<HTMLElement>(key);
  if (t) t.focus({ preventScroll: true });
}

function focusKey(a: Element): string | null {
  if (a.id) return "#" + CSS.escape(a.id);
  for (const k of ["data-node", "href", "aria-label"]) {
    const v = a.getAttribute(k);
    if (v !== null) return `${a.tagName.toLowerCase()}[${k}="${CSS.escape(v)}"]`;
  }
  return null;
}
