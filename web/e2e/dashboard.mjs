// dashboard.mjs - the dashboard end to end: Debian's chromium, headless,
// driven by Playwright (playwright-core: no bundled browser) against the
// hetpoold that tests/integration/web.py started (HP_URL, with tokens
// HP_ADMIN, HP_USER, HP_READER).  Prints "ok NAME" / "FAIL NAME: why"
// lines; screenshots of every page at 1280 and 390 px wide go to
// HP_ARTIFACTS.  Every page is checked with axe-core (no serious or
// critical violation) and for console errors.
import { chromium } from "playwright-core";
import { readFileSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const URL0 = process.env.HP_URL;
const T = { admin: process.env.HP_ADMIN, user: process.env.HP_USER, reader: process.env.HP_READER };
const ART = process.env.HP_ARTIFACTS;
const ROOT = process.env.HP_ROOT;
const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
mkdirSync(ART, { recursive: true });

let failures = 0;
const ok = (n) => console.log("ok   " + n);
const fail = (n, why) => {
  failures++;
  console.log(`FAIL ${n}: ${String(why).replace(/\n/g, " ").slice(0, 600)}`);
};
const check = (n, cond, why) => (cond ? ok(n) : fail(n, why ?? "condition false"));

async function api(method, path, token, body) {
  const r = await fetch(URL0 + path, {
    method,
    headers: { Authorization: "Bearer " + token, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

const browser = await chromium.launch({ executablePath: process.env.HP_CHROMIUM, headless: true, args: ["--no-sandbox"] });

// A page with its own console: errors (console.error, uncaught
// exceptions, failed loads, CSP violations) are collected.
async function open(viewport = { width: 1280, height: 900 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.errors = [];
  page.expected = []; // patterns of errors a step provokes on purpose
  page.on("console", (m) => {
    if (m.type() === "error" && !page.expected.some((re) => re.test(m.text()))) page.errors.push(m.text());
  });
  page.on("pageerror", (e) => page.errors.push("uncaught: " + e.message));
  page.requests = [];
  page.on("request", (r) => page.requests.push(r.method() + " " + new URL(r.url()).pathname));
  return page;
}

async function login(page, token) {
  await page.goto(URL0 + "/");
  await page.fill("#token", token);
  await page.click("button[type=submit]");
  await page.waitForSelector("nav");
}

async function axe(page, name) {
  await page.evaluate(AXE + ";0"); // devtools evaluation: not subject to the page's CSP
  const res = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, n: v.nodes.length, target: v.nodes[0]?.target?.join(" ") }));
  });
  const bad = res.filter((v) => v.impact === "serious" || v.impact === "critical");
  check(`axe: ${name} has no serious or critical violation`, bad.length === 0, JSON.stringify(bad));
}

function noErrors(page, name) {
  check(`no console errors on ${name}`, page.errors.length === 0, page.errors.join(" | "));
  page.errors.length = 0;
}

async function shots(page, name) {
  for (const w of [1280, 390]) {
    await page.setViewportSize({ width: w, height: 900 });
    await page.waitForTimeout(150); // the charts follow their width
    await page.screenshot({ path: join(ART, `${name}-${w}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

const t0 = Date.now();
try {
  // ---- sign in: a bad token is refused on the form; the token stays out of URLs
  const page = await open();
  await page.goto(URL0 + "/");
  await shots(page, "login");
  await axe(page, "the sign-in page");
  page.expected.push(/status of 401/);
  await page.fill("#token", "hpt_wrong");
  await page.click("button[type=submit]");
  await page.waitForFunction(() => document.querySelector("#login-error")?.textContent);
  check("a wrong token is refused with the server's message", /unknown or revoked/.test(await page.textContent("#login-error")));
  page.expected.length = 0;
  page.errors.length = 0;
  await page.fill("#token", T.user);
  await page.click("button[type=submit]");
  await page.waitForSelector("#nodes");
  check("signed in, the pool page shows", (await page.textContent("nav .who")).includes("(user)"));
  check("the token is in sessionStorage, not in the URL", (await page.evaluate(() => sessionStorage.getItem("hetpool.token"))) === T.user
    && !page.url().includes(T.user) && !page.requests.some((r) => r.includes(T.user)));

  // ---- pool
  const nodes = (await api("GET", "/v1/nodes", T.user)).json.nodes;
  const rows = await page.$$eval("#nodes tbody tr", (trs) => trs.length);
  check("the pool lists every node", rows === nodes.length, `${rows} rows, ${nodes.length} nodes`);
  const net = await page.$$eval("#nodes tbody tr", (trs) => trs.map((tr) => [tr.children[0].textContent, tr.children[3].textContent]));
  check("each node's network is shown as the API has it", net.length === nodes.length && nodes.every((n) => net.some(([name, cell]) =>
    name.startsWith(n.name) && cell.includes(`${n.net_bw_gbps} Gbit/s`) && cell.includes(n.net_transport))), JSON.stringify(net.slice(0, 3)));
  const totals = await page.$$eval("#totals tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  const want = {};
  for (const n of nodes) for (const d of n.device_list) want[d.type] = (want[d.type] || 0) + 1;
  check("totals by type equal the API's devices", totals.length === Object.keys(want).length && totals.every((r) => want[r[0]] === Number(r[1])), JSON.stringify(totals));
  // free, allocated, drained and reserved add up to the devices (the sample
  // pool has reserved ones)
  check("the totals' columns add up (reserved devices counted)", totals.some((r) => Number(r[5]) > 0) &&
    totals.every((r) => Number(r[1]) === Number(r[2]) + Number(r[3]) + Number(r[4]) + Number(r[5])), JSON.stringify(totals));
  check("this host's devices are shown", (await page.textContent("main")).includes("This host"));
  check("a user is not offered drain", (await page.$$("button[data-node]")).length === 0);
  await shots(page, "pool");
  await axe(page, "the pool page");
  noErrors(page, "the pool page");

  // ---- plan: bad input first
  await page.click("a[href='#/plan']");
  await page.waitForSelector("#file");
  const fmnist = join(ROOT, "data", "models", "fmnist-cnn.json");
  const bad = join(ART, "corrupt.onnx");
  writeFileSync(bad, "this is not an ONNX model");
  page.expected.push(/status of (400|422)/);
  await page.setInputFiles("#file", bad);
  await page.waitForFunction(() => document.querySelector("#file-err")?.textContent);
  check("a corrupt model file gets the API's message beside the field", /cannot be analysed/.test(await page.textContent("#file-err")), await page.textContent("#file-err"));
  await page.setInputFiles("#file", fmnist);
  await page.waitForFunction(() => [...document.querySelectorAll("#model option")].some((o) => o.textContent.startsWith("fmnist-cnn")));
  check("a spec uploaded is stored and picked", (await page.$eval("#model", (s) => s.selectedOptions[0].textContent)).startsWith("fmnist-cnn"));
  // a file name the API refuses as a model's name: the page makes one from it
  const odd = join(ART, "fmnist-cnn (1).json");
  writeFileSync(odd, readFileSync(fmnist));
  await page.setInputFiles("#file", odd);
  await page.waitForFunction(() => document.querySelector("#file-err")?.textContent || [...document.querySelectorAll("#model option")].some((o) => o.textContent.startsWith("fmnist-cnn-1 ")), null, { timeout: 10000 }).catch(() => {});
  check("a file named 'fmnist-cnn (1).json' is stored as fmnist-cnn-1", (await page.$eval("#model", (s) => s.selectedOptions[0].textContent)).startsWith("fmnist-cnn-1 ") && !(await page.textContent("#file-err")),
    await page.textContent("#file-err"));
  await page.waitForSelector("#front-plot canvas");
  await page.fill("#batch", "abc");
  await page.waitForFunction(() => document.querySelector("#batch-err")?.textContent);
  check("a non-numeric batch gets the API's message beside the field", (await page.textContent("#batch-err")) === "'batch' must be an integer", await page.textContent("#batch-err"));
  check("... and submit is disabled", await page.$eval("#submit", (b) => b.disabled));
  await page.fill("#batch", "64");
  const past = new Date(Date.now() - 86400e3);
  const p2 = (n) => String(n).padStart(2, "0");
  await page.fill("#deadline", `${past.getFullYear()}-${p2(past.getMonth() + 1)}-${p2(past.getDate())}T${p2(past.getHours())}:${p2(past.getMinutes())}`);
  await page.waitForFunction(() => document.querySelector("#deadline-err")?.textContent);
  check("a deadline in the past gets the API's message beside the field", /deadline_s/.test(await page.textContent("#deadline-err")), await page.textContent("#deadline-err"));
  await page.click("#submit", { force: true, trial: false }).catch(() => {});
  check("nothing was submitted from bad input", !page.requests.some((r) => r === "POST /v1/jobs"), page.requests.filter((r) => r.startsWith("POST")).join(","));
  await shots(page, "plan-bad-input");
  page.expected.length = 0;
  page.errors.length = 0;

  // ---- plan: the recommendation follows the fields; the plot is the API's front
  const soon = new Date(Date.now() + 3600e3);
  const recP = page.waitForResponse((r) => r.url().endsWith("/v1/recommendations") && r.request().postDataJSON().samples === 20000);
  await page.fill("#deadline", `${soon.getFullYear()}-${p2(soon.getMonth() + 1)}-${p2(soon.getDate())}T${p2(soon.getHours())}:${p2(soon.getMinutes())}`);
  await page.fill("#samples", "20000");
  const rec = await (await recP).json();
  await page.waitForFunction(() => !document.querySelector("#deadline-err")?.textContent && document.querySelector("#front-plot")?.dataset.front);
  await page.waitForTimeout(400);
  const front = JSON.parse(await page.$eval("#front-plot", (e) => e.dataset.front));
  const want2 = rec.pareto.map((p) => [p.predicted_time_s, p.predicted_energy_j]).sort((a, b) => a[0] - b[0]);
  check("the plot's points equal the API's front", JSON.stringify(front) === JSON.stringify(want2), `${JSON.stringify(front)} vs ${JSON.stringify(want2)}`);
  const choice = JSON.parse(await page.$eval("#front-plot", (e) => e.dataset.choice));
  check("the choice is highlighted on the plot", choice.length === 1 && choice[0][0] === rec.choice.predicted_time_s && choice[0][1] === rec.choice.predicted_energy_j, JSON.stringify(choice));
  const devRows = await page.$$eval("#chosen tbody tr", (t) => t.length);
  check("the chosen devices are listed", devRows === rec.choice.devices.length, `${devRows} vs ${rec.choice.devices.length}`);
  check("the learning-rate scale is shown", (await page.textContent("#lr-scale")) === String(rec.choice.lr_scale));
  const box = await page.$eval("#front-plot .u-over", (e) => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; });
  let hovered = "";
  for (let i = 0; i <= 40 && !/on /.test(hovered); i++) {
    await page.mouse.move(box[0] + (box[2] * i) / 40, box[1] + box[3] / 2);
    hovered = await page.textContent("#hover");
  }
  check("hovering the plot shows a point's configuration", / on .*local batch/.test(hovered), hovered);
  await shots(page, "plan");
  await axe(page, "the plan page");
  noErrors(page, "the plan page");

  // ---- a range test under a decade wide: the API's message beside the field, no job
  const before = (await api("GET", "/v1/jobs?limit=500", T.user)).json.jobs.length;
  page.expected.push(/status of 400/);
  await page.fill("#lrmin", "0.1");
  await page.fill("#lrmax", "0.2");
  await page.click("#submit");
  await page.waitForFunction(() => document.querySelector("#lrmax-err")?.textContent, null, { timeout: 10000 }).catch(() => {});
  check("a range test under a decade wide gets the API's message beside its field", /at least 10 times/.test(await page.textContent("#lrmax-err")), await page.textContent("#lrmax-err"));
  check("... and nothing is submitted", (await api("GET", "/v1/jobs?limit=500", T.user)).json.jobs.length === before);
  await page.fill("#lrmin", "");
  await page.fill("#lrmax", "");
  // ---- a stall limit under a second: the API's message beside its field
  await page.fill("#stall", "0.5");
  await page.click("#submit");
  await page.waitForFunction(() => document.querySelector("#stall-err")?.textContent, null, { timeout: 10000 }).catch(() => {});
  check("a stall limit under 1 s gets the API's message beside its field", /stall_timeout_s/.test(await page.textContent("#stall-err")), await page.textContent("#stall-err"));
  check("... and no job is made", (await api("GET", "/v1/jobs?limit=500", T.user)).json.jobs.length === before);
  page.expected.length = 0;

  // ---- submit a short job (local backend: this host's CPU) and follow it
  // for its 12 s budget: 10 epochs, which it does not finish (one epoch,
  // 313 steps, could all fall between two of the page's polls: 313 then
  // 313)
  await page.fill("#name", "e2e-train");
  await page.fill("#epochs", "10");
  await page.fill("#maxsec", "12");
  await page.fill("#stall", "600");
  await page.fill("#ranks", "2");
  await page.click("#submit");
  await page.waitForURL(/#\/jobs\/\d+$/);
  const jobId = Number(page.url().split("/").pop());
  check("submitting goes to the new job's page", jobId > 0, page.url());
  const desc = (await api("GET", `/v1/jobs/${jobId}`, T.user)).json.description || {};
  check("... with the form's stall limit", desc.training?.stall_timeout_s === 600, JSON.stringify(desc.training));
  await page.waitForFunction(() => Number((document.querySelector("#steps-done")?.textContent || "0").split(" ")[0]) > 0, null, { timeout: 60000 });
  const s1 = Number((await page.textContent("#steps-done")).split(" ")[0]);
  // the page's own polling must bring more steps (no reload here)
  await page.waitForFunction((s1) => Number((document.querySelector("#steps-done")?.textContent || "0").split(" ")[0]) > s1, s1, { timeout: 60000 }).catch(() => {});
  const s2 = Number((await page.textContent("#steps-done")).split(" ")[0]);
  check("the job page updates while it trains (steps done grow without a reload)", s2 > s1, `${s1} then ${s2}`);
  // one failed look (a proxy's 502): shown, and the next look clears it
  page.expected.push(/status of 502/);
  let looks502 = 0;
  await page.route(`**/v1/jobs/${jobId}`, (r) => (looks502++ === 0 ? r.fulfill({ status: 502, contentType: "text/plain", body: "Bad Gateway" }) : r.continue()));
  await page.waitForFunction(() => document.querySelector("#main > p.error")?.textContent, null, { timeout: 10000 }).catch(() => {});
  const shown502 = await page.$eval("#main > p.error", (e) => e.textContent);
  await page.waitForFunction(() => !document.querySelector("#main > p.error")?.textContent, null, { timeout: 10000 }).catch(() => {});
  check("a failed look is shown, and the job page goes on and clears it", shown502 === "Bad Gateway" && !(await page.$eval("#main > p.error", (e) => e.textContent)) && looks502 >= 2,
    `${shown502}, then ${await page.$eval("#main > p.error", (e) => e.textContent)}; ${looks502} looks`);
  await page.unroute(`**/v1/jobs/${jobId}`);
  check("the job page draws its charts", (await page.$$(".charts canvas")).length >= 4);
  const rankSeries = await page.$$eval(".charts section:nth-child(3) .u-legend .u-series", (e) => e.map((x) => x.textContent));
  check("the step-time chart has one series per rank", rankSeries.filter((t) => /rank \d/.test(t)).length === 2, rankSeries.join(","));
  await page.waitForFunction(() => (document.querySelector("#log")?.textContent || "").length > 0, null, { timeout: 20000 }).catch(() => {});
  check("the log's tail is shown", (await page.textContent("#log")).length > 0);
  await shots(page, "job-running");
  await axe(page, "the job page");
  noErrors(page, "the job page");
  page.expected.length = 0;

  // ---- another job, cancelled from its page
  const j2 = await api("POST", "/v1/jobs", T.user, { spec: JSON.parse(readFileSync(fmnist, "utf8")), samples: 60000, epochs: 5, batch: 64, deadline_s: 7200, data: "fashion-mnist", name: "e2e-cancel" });
  check("a second job is submitted (API)", j2.status === 201, JSON.stringify(j2.json));
  await page.goto(`${URL0}/#/jobs/${j2.json.id}`);
  await page.waitForSelector("#cancel");
  await page.click("#cancel");
  await page.waitForFunction(() => /cancel/.test(document.querySelector("#job-state")?.textContent + document.querySelector("main h1 + p")?.textContent), null, { timeout: 30000 });
  let j2s = null;
  for (let i = 0; i < 100; i++) {
    j2s = (await api("GET", `/v1/jobs/${j2.json.id}`, T.user)).json;
    if (j2s.state === "cancelled") break;
    await new Promise((r) => setTimeout(r, 200));
  }
  check("the other job is cancelled from its page", j2s.state === "cancelled", j2s.state);
  const deadlineDd = () => page.evaluate(() => [...document.querySelectorAll("#job-facts dt")].find((dt) => dt.textContent === "Deadline")?.nextElementSibling?.textContent || "");
  await page.waitForFunction(() => /cancelled/.test(document.querySelector("#job-state")?.textContent || ""), null, { timeout: 10000 }).catch(() => {});
  await page.waitForTimeout(300);
  const dl2 = await deadlineDd();
  check("a cancelled job's deadline is not judged (not 'missed')", /not judged/.test(dl2) && !/missed/.test(dl2), dl2);
  noErrors(page, "the cancelled job's page");

  // ---- an ended job removed from its page: a first click asks, a second
  // removes it with its files, and the page goes to the list
  const j3 = await api("POST", "/v1/jobs", T.user, { spec: JSON.parse(readFileSync(fmnist, "utf8")), samples: 60000, epochs: 5, batch: 64, deadline_s: 7200, data: "fashion-mnist", name: "e2e-remove" });
  await api("POST", `/v1/jobs/${j3.json.id}/cancel`, T.user);
  for (let i = 0; i < 150; i++) {
    if ((await api("GET", `/v1/jobs/${j3.json.id}`, T.user)).json.state === "cancelled") break;
    await new Promise((r) => setTimeout(r, 200));
  }
  await page.goto(`${URL0}/#/jobs/${j3.json.id}`);
  await page.waitForSelector("#remove", { timeout: 15000 });
  check("an ended job offers Remove, not Cancel", (await page.$$("#cancel")).length === 0);
  await page.click("#remove");
  await page.waitForFunction(() => /click again/.test(document.querySelector("#remove")?.textContent || ""), null, { timeout: 10000 });
  check("a first click only asks", (await api("GET", `/v1/jobs/${j3.json.id}`, T.user)).status === 200);
  await page.click("#remove");
  await page.waitForFunction(() => location.hash === "#/jobs", null, { timeout: 10000 }).catch(() => {});
  check("the second click removes it and shows the list", (await page.evaluate(() => location.hash)) === "#/jobs"
    && (await api("GET", `/v1/jobs/${j3.json.id}`, T.user)).status === 404);
  noErrors(page, "the removed job's page");

  // ---- jobs list
  await page.goto(URL0 + "/#/jobs");
  await page.waitForSelector("#jobs");
  const listed = await page.$$eval("#jobs tbody tr", (t) => t.map((tr) => tr.children[0].textContent));
  check("the jobs list shows both jobs", listed.includes("#" + jobId) && listed.includes("#" + j2.json.id), listed.join(","));
  const row2 = await page.$eval(`#jobs a[href='#/jobs/${j2.json.id}']`, (a) => a.closest("tr").lastElementChild.textContent);
  check("... the cancelled one's deadline not judged", /not judged/.test(row2), row2);
  // the keyboard's place survives the list's refresh
  await page.focus(`#jobs a[href='#/jobs/${jobId}']`);
  await page.waitForResponse((r) => r.url().includes("/v1/jobs?"), { timeout: 10000 }).catch(() => {});
  await page.waitForTimeout(300);
  const focused = await page.evaluate(() => document.activeElement?.getAttribute("href"));
  check("the focused link keeps the focus across the list's refresh", focused === `#/jobs/${jobId}`, focused);
  await shots(page, "jobs");
  await axe(page, "the jobs page");
  noErrors(page, "the jobs page");

  // wait for the first job to end, so the estimator has a measurement
  let j1 = null;
  for (let i = 0; i < 300; i++) {
    j1 = (await api("GET", `/v1/jobs/${jobId}`, T.user)).json;
    if (["succeeded", "failed", "cancelled"].includes(j1.state)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  check("the submitted job ended", j1.state === "succeeded", j1.state + " " + j1.reason);
  // its page, with the metrics as a server that answers a fifth of the file
  // a request (the page must read on to X-Size), and rank 0's log longer
  // than the 16 KiB tail shown
  const auth = { headers: { Authorization: "Bearer " + T.user } };
  const mbuf = Buffer.from(await (await fetch(`${URL0}/v1/jobs/${jobId}/metrics?limit=16777216`, auth)).arrayBuffer());
  const part = Math.max(2048, Math.ceil(mbuf.length / 5));
  const lastStep = JSON.parse(mbuf.toString().split("\n").filter((l) => l.startsWith('{"step"')).pop()).step;
  await page.route(`**/v1/jobs/${jobId}/metrics*`, (r) => {
    const off = Number(new URL(r.request().url()).searchParams.get("offset") || 0);
    return r.fulfill({ status: 200, contentType: "application/x-ndjson", headers: { "X-Size": String(mbuf.length) }, body: mbuf.subarray(off, off + part) });
  });
  const longLog = Array.from({ length: 3000 }, (_, i) => `line ${i + 1} of a long log`).join("\n") + "\n";
  await page.route(`**/v1/jobs/${jobId}/logs*`, (r) => {
    const q = new URL(r.request().url()).searchParams;
    const off = Number(q.get("offset") || 0);
    return r.fulfill({ status: 200, contentType: "text/plain; charset=utf-8", headers: { "X-Size": String(longLog.length) }, body: longLog.slice(off, off + Number(q.get("limit") || 1048576)) });
  });
  await page.goto(`${URL0}/#/jobs/${jobId}`);
  await page.waitForFunction(() => /succeeded|failed/.test(document.querySelector("#job-state")?.textContent || ""));
  await page.waitForFunction((n) => (document.querySelector("#steps-done")?.textContent || "").startsWith(n + " "), lastStep, { timeout: 10000 }).catch(() => {});
  await page.waitForTimeout(500);
  check("an ended job's page reads its metrics to the end, a part at a time", (await page.textContent("#steps-done")).startsWith(lastStep + " "),
    `${await page.textContent("#steps-done")} vs ${lastStep} (${mbuf.length} bytes, ${part} an answer)`);
  const logBox = (await page.textContent("#log")).trim();
  check("... and shows its log's tail, not its head", logBox.endsWith("line 3000 of a long log") && !logBox.includes("line 1 of"), logBox.slice(-80));
  const events = (await (await fetch(`${URL0}/v1/jobs/${jobId}/metrics`, { headers: { Authorization: "Bearer " + T.user } })).text())
    .split("\n").filter((l) => l.includes('"event":"rebalance"')).length;
  await page.waitForFunction((n) => (document.querySelector("#balance")?.textContent || "").includes(`${n} re-split`), events, { timeout: 10000 }).catch(() => {});
  check("the page counts the trainer's re-splits (each marked on the step-time chart)", (await page.textContent("#balance")).includes(`${events} re-split`), `${await page.textContent("#balance")} vs ${events}`);
  // again, the first look of the job slower than the page's 2 s: the looks
  // must not overlap
  let inflight = 0, most = 0, jobLooks = 0;
  await page.route(`**/v1/jobs/${jobId}`, async (r) => {
    most = Math.max(most, ++inflight);
    if (jobLooks++ === 0) await new Promise((res) => setTimeout(res, 2500));
    await r.continue().catch(() => {}); // (unrouted meanwhile)
    inflight--;
  });
  await page.goto(`${URL0}/#/jobs`);
  await page.waitForSelector("#jobs");
  await page.goto(`${URL0}/#/jobs/${jobId}`);
  await page.waitForFunction(() => /succeeded|failed/.test(document.querySelector("#job-state")?.textContent || ""));
  await page.waitForTimeout(300);
  check("the page's looks never overlap (a slow answer delays the next look)", most === 1 && jobLooks >= 1, `${most} at once, ${jobLooks} looks`);
  check("... and read each step once", (await page.textContent("#steps-done")).startsWith(lastStep + " "), await page.textContent("#steps-done"));
  await page.unroute(`**/v1/jobs/${jobId}`);
  await page.unroute(`**/v1/jobs/${jobId}/logs*`);
  await page.unroute(`**/v1/jobs/${jobId}/metrics*`);
  await shots(page, "job-ended");
  noErrors(page, "the ended job's page");

  // ---- hetpoold restarting while the page loads (503 on the token's
  // check): the token is kept, the error shown, Retry signs in
  page.expected.push(/status of 503/);
  await page.route("**/v1/whoami", (r) => r.fulfill({ status: 503, contentType: "application/problem+json",
    body: JSON.stringify({ type: "urn:hetpool:problem:shutting-down", title: "Service Unavailable", status: 503, detail: "hetpoold is shutting down" }) }));
  await page.reload();
  await page.waitForSelector("#retry, #token", { timeout: 10000 }).catch(() => {});
  const bootErr = await page.evaluate(() => document.querySelector("#boot-error")?.textContent || "");
  check("a 503 at load keeps the token and says why, with Retry", (await page.evaluate(() => sessionStorage.getItem("hetpool.token"))) === T.user &&
    /shutting down/.test(bootErr) && (await page.$$("#retry")).length === 1, bootErr || (await page.textContent("main")));
  await page.unroute("**/v1/whoami");
  if ((await page.$$("#retry")).length) await page.click("#retry");
  const retried = await page.waitForSelector("nav", { timeout: 10000 }).then(() => true, () => false);
  check("... and Retry signs in with it", retried);
  if (!retried) await login(page, T.user);
  page.expected.length = 0;
  page.errors.length = 0;

  // ---- estimator: profile rows (predicted by the estimator in use) and the finished job
  const prof = readFileSync(join(ROOT, "data", "profiles", "cpu-default.csv"), "utf8").split("\n").slice(0, 41).join("\n") + "\n";
  const pr = await fetch(`${URL0}/v1/measurements`, { method: "POST", headers: { Authorization: "Bearer " + T.user, "Content-Type": "text/csv" }, body: prof });
  check("profile rows are added (API)", pr.status === 201, pr.status);
  await page.goto(URL0 + "/#/estimator");
  await page.waitForSelector("#est-version");
  const meas = (await api("GET", "/v1/measurements?limit=1000", T.user)).json.measurements.filter((m) => m.step_time_s > 0 && m.predicted_step_time_s > 0);
  await page.waitForFunction(() => document.querySelector("#est-plot")?.dataset.points, null, { timeout: 10000 }).catch(() => {});
  const estPts = JSON.parse((await page.getAttribute("#est-plot", "data-points")) || "[]");
  const wantEst = meas.map((m) => [m.predicted_step_time_s, m.step_time_s]).sort((a, b) => a[0] - b[0]);
  check("the estimator's scatter plots every profile row and finished job that has both times, as the API gives them",
    meas.filter((m) => m.kind === "profile").length === 40 && meas.some((m) => m.kind === "job") &&
    JSON.stringify(estPts) === JSON.stringify(wantEst) && (await page.$$("#est-plot canvas")).length === 1, `${estPts.length} plotted, ${meas.length} in the API`);
  check("a user is not offered refit", (await page.$$("#refit")).length === 0);
  await shots(page, "estimator");
  await axe(page, "the estimator page");
  noErrors(page, "the estimator page");

  // ---- a learning-rate range test run as a job, and its page
  const rt = await api("POST", "/v1/jobs", T.user, { spec: JSON.parse(readFileSync(fmnist, "utf8")), samples: 60000, steps: 150, batch: 64, deadline_s: 7200, data: "fashion-mnist", name: "e2e-range", training: { threads: 1, seed: 5, lr_range: { lr_min: 1e-4, lr_max: 10 } } });
  check("a range test is submitted (API)", rt.status === 201, JSON.stringify(rt.json));
  await page.goto(URL0 + "/#/lr-find");
  await page.waitForSelector("#range-tests");
  const rtListed = await page.$$eval("#range-tests tbody tr", (t) => t.map((tr) => tr.children[0].textContent));
  check("the range tests page lists it (and no other job)", rtListed.length === 1 && rtListed[0] === "#" + rt.json.id, rtListed.join(","));
  await shots(page, "lr-find-list");
  await axe(page, "the range tests page");
  await page.click(`a[href='#/lr-find/${rt.json.id}']`);
  await page.waitForFunction(() => /succeeded|failed/.test(document.querySelector("#lr-state")?.textContent || ""), null, { timeout: 120000 });
  await page.waitForTimeout(300);
  const lf = (await api("GET", `/v1/jobs/${rt.json.id}/lr-find`, T.user)).json;
  const drawn = JSON.parse((await page.getAttribute("#lr-plot", "data-points")) || "[]");
  const wantPts = lf.points.filter((p) => p.loss !== null).map((p) => [p.lr, p.loss]);
  check("the plot's points are the API's steps (rate, loss)", drawn.length === wantPts.length && drawn.length >= 20 &&
    drawn.every((p, i) => p[0] === wantPts[i][0] && p[1] === wantPts[i][1]), `${drawn.length} drawn, ${wantPts.length} in the API`);
  const poly = JSON.parse((await page.getAttribute("#lr-plot", "data-polynomial")) || "[]");
  check("the polynomial fit is drawn", lf.curves && poly.length === lf.curves.polynomial.length && poly.length > 0, poly.length);
  const sug = await page.textContent("#lr-suggested");
  check("the suggested rate and the interval are shown as the API gives them",
    lf.analysis && Number(sug) > 0 && Math.abs(Number(sug) / lf.analysis.suggested_lr - 1) < 0.01 &&
    (await page.textContent("#lr-interval")).includes(" to "), `${sug} vs ${lf.analysis && lf.analysis.suggested_lr}`);
  await shots(page, "lr-find");
  await axe(page, "the range test page");
  noErrors(page, "the range test pages");
  await page.goto(`${URL0}/#/jobs/${rt.json.id}`);
  await page.waitForSelector("#lr-find-link");
  check("the range test's job page links to its analysis", (await page.getAttribute("#lr-find-link", "href")) === `#/lr-find/${rt.json.id}`);
  await page.context().close();

  // ---- a reader: no submit, no upload, no cancel
  const rp = await open();
  // a token pasted with spaces, a zero-width space and "Bearer " before it
  await rp.goto(URL0 + "/");
  await rp.fill("#token", ` Bearer ${T.reader}\u200b `);
  await rp.click("button[type=submit]");
  const cleaned = await rp.waitForSelector("nav", { timeout: 5000 }).then(() => true, () => false);
  check("a pasted token is cleaned (white space, a zero-width space, a leading 'Bearer ')", cleaned);
  if (!cleaned) await login(rp, T.reader);
  await rp.click("a[href='#/plan']");
  await rp.waitForSelector("#plan-form");
  await rp.waitForTimeout(500);
  check("a reader is not offered submit or upload", (await rp.$$("#submit")).length === 0 && (await rp.$$("#file")).length === 0);
  await rp.goto(`${URL0}/#/jobs/${j2.json.id}`);
  await rp.waitForSelector("#job-state");
  check("a reader is not offered cancel or remove", (await rp.$$("#cancel")).length === 0 && (await rp.$$("#remove")).length === 0);
  noErrors(rp, "the reader's pages");
  // signing out stops the page's polling: the form stays as typed, no
  // "no longer accepted"
  await rp.goto(URL0 + "/#/jobs");
  await rp.waitForSelector("#jobs");
  await rp.click("nav button.link");
  await rp.waitForSelector("#token");
  const nOut = rp.requests.length;
  await rp.fill("#token", "hpt_half_typed");
  await rp.waitForTimeout(3500);
  const after = { value: await rp.inputValue("#token"), err: await rp.textContent("#login-error"), asked: rp.requests.slice(nOut).filter((r) => r.includes("/v1/")) };
  check("after Sign out nothing polls and the form keeps what is typed", after.value === "hpt_half_typed" && !after.err && after.asked.length === 0, JSON.stringify(after));
  await rp.context().close();

  // ---- an admin: drain and resume a node, refit offered
  const ap = await open();
  await login(ap, T.admin);
  await ap.waitForSelector("button[data-node='t4-01']");
  await ap.click("button[data-node='t4-01']");
  await ap.waitForFunction(() => document.querySelector("button[data-node='t4-01']")?.textContent === "Resume");
  const t4 = (await api("GET", "/v1/nodes/t4-01", T.admin)).json;
  check("an admin drains a node from the pool page", t4.state === "drained", t4.state);
  const t4row = await ap.$$eval("#totals tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)).find((r) => r[0] === "t4"));
  const t4n = t4.device_list.filter((d) => d.type === "t4").length;
  check("... and its devices count as drained in the totals", t4row && Number(t4row[4]) === t4n, JSON.stringify(t4row) + " vs " + t4n);
  await shots(ap, "pool-admin");
  await ap.click("button[data-node='t4-01']");
  await ap.waitForFunction(() => document.querySelector("button[data-node='t4-01']")?.textContent === "Drain");
  check("... and resumes it", (await api("GET", "/v1/nodes/t4-01", T.admin)).json.state === "active");
  await ap.click("a[href='#/estimator']");
  await ap.waitForSelector("#est-version");
  check("an admin is offered refit", (await ap.$$("#refit")).length === 1);
  noErrors(ap, "the admin's pages");
  await ap.context().close();

  // ---- a phone-sized screen: nothing wider than the screen on the pool page
  const mp = await open({ width: 390, height: 844 });
  await login(mp, T.user);
  await mp.waitForSelector("#nodes");
  const sw = await mp.evaluate(() => document.documentElement.scrollWidth);
  check("at 390 px the page does not scroll sideways (tables scroll in their box)", sw <= 390, sw);
  await mp.context().close();
} catch (e) {
  fail("dashboard end to end", e.stack || e);
} finally {
  await browser.close();
}
console.log(`# dashboard end to end: ${((Date.now() - t0) / 1000).toFixed(1)} s; screenshots in ${ART}`);
process.exit(failures ? 1 : 0);
