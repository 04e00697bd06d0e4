// bench_dashboard.mjs - the dashboard on loopback, in Debian's chromium
// (headless, through playwright-core): the time from navigation to the
// first rendered plan plot (the time-energy front drawn from the first
// recommendation), cold each time (a new browser context: no cache), and
// the bytes the browser loads.  Goals: under 1 s and under 300 KB
// compressed.  Starts its own hetpoold (temporary database, the sample
// pool and this host) with the fmnist-cnn spec stored.
//
//   node benchmarks/bench_dashboard.mjs BUILD_DIR [RUNS]   (benchmarks/bench_dashboard.sh)
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";

const root = resolve(new URL("..", import.meta.url).pathname);
const build = resolve(process.argv[2] || join(root, "build"));
const runs = Number(process.argv[3] || process.env.BENCH_DASH_RUNS || 9);
const req = createRequire(join(root, "web", "package.json"));
const { chromium } = req("playwright-core");
const chromiumPath = process.env.HP_CHROMIUM || "/usr/bin/chromium";

const tmp = mkdtempSync(join(tmpdir(), "bench-dash-"));
const admin = "bench-" + randomBytes(16).toString("hex");
const pf = join(tmp, "port");
const d = spawn(join(build, "bin", "hetpoold"), ["--db", join(tmp, "pool.db"), "--listen", "127.0.0.1:0", "--port-file", pf,
  "--pool", join(root, "data", "pools", "sample.json"), "--register-self", "--log-level", "warn"],
  { env: { ...process.env, HETPOOL_ADMIN_TOKEN: admin }, stdio: ["ignore", "ignore", "inherit"] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let i = 0; i < 300 && !(existsSync(pf) && readFileSync(pf, "utf8").trim()); i++) await sleep(50);
const url = "http://127.0.0.1:" + readFileSync(pf, "utf8").trim();
const api = async (method, path, body) => {
  const r = await fetch(url + path, { method, headers: { Authorization: "Bearer " + admin, "Content-Type": "application/json" }, body: JSON.stringify(body) });
  return r.json();
};
const user = (await api("POST", "/v1/tokens", { name: "bench", role: "user" })).token;
await api("POST", "/v1/models", { name: "fmnist-cnn", spec: JSON.parse(readFileSync(join(root, "data", "models", "fmnist-cnn.json"), "utf8")) });

const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox"] });
const times = [];
const split = [];
let bytes = null;
for (let i = 0; i < runs + 1; i++) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await ctx.addInitScript((t) => sessionStorage.setItem("hetpool.token", t), user);
  const page = await ctx.newPage();
  const loads = [];
  page.on("requestfinished", async (r) => {
    const s = await r.sizes();
    const res = await r.response();
    loads.push({ path: new URL(r.url()).pathname, body: s.responseBodySize, headers: s.responseHeadersSize, enc: (await res.allHeaders())["content-encoding"] || "" });
  });
  await page.goto(url + "/#/plan", { waitUntil: "commit" });
  // the time is taken in the page, in the first animation frame that
  // finds the plot drawn (not after the round trip back to this script)
  const seen = await page.waitForFunction(() => document.querySelector("#front-plot canvas") && document.querySelector("#front-plot")?.dataset.front && performance.now(), null, { polling: "raf", timeout: 20000 });
  const ms = await seen.jsonValue();
  const parts = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    const rec = performance.getEntriesByType("resource").filter((e) => e.name.endsWith("/v1/recommendations"));
    return { dom: nav.domContentLoadedEventEnd, recStart: rec[0]?.startTime, recEnd: rec[0]?.responseEnd };
  });
  await page.waitForLoadState("networkidle");
  if (i > 0) {
    // the first run warms hetpoold's caches and the OS
    times.push(ms);
    split.push(parts);
  }
  if (i === 1) bytes = loads;
  await ctx.close();
}
// uPlot alone, on a blank page: one chart of N points per series (a job
// page's loss and accuracy), created and drawn; median of 5 per size.
const draw = [];
{
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.setContent("<div id=c style='width:1200px'></div>");
  await page.addStyleTag({ path: req.resolve("uplot/dist/uPlot.min.css") });
  await page.addScriptTag({ path: req.resolve("uplot/dist/uPlot.iife.min.js") });
  for (const n of [1000, 10000, 100000]) {
    const ms = await page.evaluate(async (n) => {
      const x = Float64Array.from({ length: n }, (_, i) => i + 1);
      const y1 = x.map((i) => 2 * Math.exp(-i / n) + 0.1 * Math.sin(i));
      const y2 = x.map((i) => 1 - Math.exp(-i / n));
      const t = [];
      for (let k = 0; k < 5; k++) {
        const el = document.getElementById("c");
        el.replaceChildren();
        const t0 = performance.now();
        // the time until uPlot's draw hook has run: the canvas is drawn
        const t1 = await new Promise((done) => {
          // eslint-disable-next-line no-undef
          const u = new uPlot({ width: 1200, height: 220, scales: { x: { time: false } }, series: [{}, { stroke: "blue" }, { stroke: "red" }],
            hooks: { draw: [() => { done(performance.now()); setTimeout(() => u.destroy()); }] } }, [x, y1, y2], el);
        });
        t.push(t1 - t0);
      }
      t.sort((a, b) => a - b);
      return t[2];
    }, n);
    draw.push(`${n} points x 2 series: ${ms.toFixed(1)} ms`);
  }
  await page.context().close();
}
await browser.close();
d.kill("SIGTERM");
await new Promise((r) => d.on("exit", r));
rmSync(tmp, { recursive: true, force: true });

times.sort((a, b) => a - b);
const med = times[Math.floor(times.length / 2)];
const stat = bytes.filter((b) => !b.path.startsWith("/v1/"));
const apiB = bytes.filter((b) => b.path.startsWith("/v1/"));
const sum = (a, k) => a.reduce((s, b) => s + b[k], 0);
console.log(`time to the first rendered plan plot, cold (new context each run), ${times.length} runs: median ${med.toFixed(0)} ms, min ${times[0].toFixed(0)}, max ${times[times.length - 1].toFixed(0)} (goal < 1000 ms)`);
const medOf = (f) => { const a = split.map(f).sort((x, y) => x - y); return a[Math.floor(a.length / 2)]; };
console.log(`  of which (medians): HTML and scripts loaded (DOMContentLoaded) ${medOf((p) => p.dom).toFixed(0)} ms; the recommendation request starts at ${medOf((p) => p.recStart).toFixed(0)} ms and takes ${medOf((p) => p.recEnd - p.recStart).toFixed(0)} ms (the exact front: 8 searches); the plot is drawn ${(med - medOf((p) => p.recEnd)).toFixed(0)} ms after its answer (median run)`);
console.log(`static files as sent (gzip): ${stat.map((b) => `${b.path.replace(/^\/assets\//, "")} ${b.body} B${b.enc ? " " + b.enc : ""}`).join(", ")}`);
console.log(`static total ${(sum(stat, "body") / 1024).toFixed(1)} KiB compressed + ${(sum(stat, "headers") / 1024).toFixed(1)} KiB headers (goal < 300 KB)`);
console.log(`API answers for the plan page: ${apiB.length} requests, ${(sum(apiB, "body") / 1024).toFixed(1)} KiB (JSON, not compressed: hetpoold does not gzip the API)`);
console.log(`everything: ${((sum(bytes, "body") + sum(bytes, "headers")) / 1024).toFixed(1)} KiB`);
console.log(`uPlot alone, one chart created and drawn (median of 5): ${draw.join("; ")}`);
