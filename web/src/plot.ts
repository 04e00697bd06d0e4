// plot.ts - the dashboard's charts over uPlot (canvas, ~50 KB, draws tens
// of thousands of points in a few ms): time series for the job page, the
// time-energy front of the plan page, and the log-log scatter of the
// estimator page.  Each chart sizes itself to its container and follows
// it; each keeps a text alternative (a table) beside it for screen
// readers.
import uPlot from "uplot";

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
export const color = (i: number): string => COLORS[i % COLORS.length];

// Tick labels of a log axis: small and large values in exponent form
// (uPlot's default writes 1e-4 as "0").
export const logTicks = (_u: uPlot, vals: number[]): string[] =>
  vals.map((v) => (v === null ? "" : v < 1e-3 || v >= 1e4 ? v.toExponential(0) : String(+v.toPrecision(2))));

function width(el: HTMLElement): number {
  return Math.max(240, Math.floor(el.clientWidth || 600));
}

// Follow the container's width; returns the cleanup.
export function follow(u: uPlot, el: HTMLElement, height: number): () => void {
  const ro = new ResizeObserver(() => {
    const w = width(el);
    if (Math.abs(w - u.width) > 2) u.setSize({ width: w, height });
  });
  ro.observe(el);
  return () => {
    ro.disconnect();
    u.destroy();
  };
}

export interface Series {
  label: string;
  scale?: string;
  points?: boolean; // points only, no line
  dash?: number[];
}

// A chart of series against one x: data[0] is x, data[i] series i-1.
export function lines(el: HTMLElement, title: string, xlabel: string, series: Series[], axes: { scale: string; label: string; side?: number }[], height = 220, marks?: () => number[]): uPlot {
  const opts: uPlot.Options = {
    title,
    width: width(el),
    height,
    scales: { x: { time: false } },
    series: [
      { label: xlabel },
      ...series.map((s, i) => ({
        label: s.label,
        scale: s.scale || axes[0].scale,
        stroke: color(i),
        width: 1.5,
        dash: s.dash,
        spanGaps: true,
        points: s.points ? { show: true, size: 5, fill: color(i) } : { show: false },
        paths: s.points ? () => null : undefined,
      })),
    ],
    axes: [
      { label: xlabel },
      ...axes.map((a) => ({ scale: a.scale, label: a.label, side: a.side ?? 3, grid: { show: a.side !== 1 } })),
    ],
    hooks: marks
      ? {
          draw: [
            (u: uPlot) => {
              // vertical marks (re-splits) across the plot
              const ctx = u.ctx;
              ctx.save();
              ctx.strokeStyle = "#888";
              ctx.setLineDash([4, 4]);
              for (const x of marks()) {
                const px = u.valToPos(x, "x", true);
                if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) continue;
                ctx.beginPath();
                ctx.moveTo(px, u.bbox.top);
                ctx.lineTo(px, u.bbox.top + u.bbox.height);
                ctx.stroke();
              }
              ctx.restore();
            },
          ],
        }
      : {},
  };
  return new uPlot(opts, [[]], el);
}

export interface FrontPoint {
  t: number; // predicted time, s
  e: number; // predicted energy, J
  ti?: [number, number];
  ei?: [number, number];
  label: string; // the configuration, for hover
}

// The time-energy front: the front's points joined, the other types'
// best configurations as points, the choice ringed, the deadline as a
// vertical line, each point's interval as whiskers.  onHover gets the
// point under the cursor (or null).
export function frontPlot(el: HTMLElement, front: FrontPoint[], alts: FrontPoint[], choice: FrontPoint | null, deadline: number, onHover: (p: FrontPoint | null) => void): uPlot {
  const all = [...front, ...alts, ...(choice ? [choice] : [])];
  const xs = [...new Set(all.map((p) => p.t))].sort((a, b) => a - b);
  const col = (pts: FrontPoint[]) => xs.map((x) => {
    const p = pts.find((q) => q.t === x);
    return p ? p.e : null;
  });
  const data: uPlot.AlignedData = [xs, col(front), col(alts), col(choice ? [choice] : [])];
  const maxT = Math.max(...all.map((p) => (p.ti ? p.ti[1] : p.t)));
  const minT = Math.min(...all.map((p) => (p.ti ? p.ti[0] : p.t)));
  // the deadline within 3x the slowest point is drawn, left of the
  // fastest one too (a deadline no configuration meets)
  const showDeadline = deadline > 0 && deadline < 3 * maxT;
  const hi = showDeadline ? Math.max(maxT, deadline) : maxT;
  const lo = showDeadline ? Math.min(minT, deadline) : minT;
  const pad = Math.max((hi - lo) * 0.05, hi * 1e-3);
  const whisk = (u: uPlot) => {
    const ctx = u.ctx;
    ctx.save();
    ctx.lineWidth = 1;
    for (const [pts, c] of [[front, color(0)], [alts, color(1)]] as [FrontPoint[], string][]) {
      ctx.strokeStyle = c;
      for (const p of pts) {
        const x = u.valToPos(p.t, "x", true), y = u.valToPos(p.e, "y", true);
        ctx.beginPath();
        if (p.ti) {
          ctx.moveTo(u.valToPos(p.ti[0], "x", true), y);
          ctx.lineTo(u.valToPos(p.ti[1], "x", true), y);
        }
        if (p.ei) {
          ctx.moveTo(x, u.valToPos(p.ei[0], "y", true));
          ctx.lineTo(x, u.valToPos(p.ei[1], "y", true));
        }
        ctx.stroke();
      }
    }
    if (showDeadline) {
      const px = u.valToPos(deadline, "x", true);
      ctx.strokeStyle = "#b00";
      ctx.setLineDash([6, 4]);
      ctx.beginPath();
      ctx.moveTo(px, u.bbox.top);
      ctx.lineTo(px, u.bbox.top + u.bbox.height);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = "#b00";
      ctx.font = `${12 * devicePixelRatio}px sans-serif`;
      // left of the line, or right of it where the left would run into
      // the y axis
      const w = ctx.measureText("deadline").width, gap = 4 * devicePixelRatio;
      ctx.fillText("deadline", px - w - gap >= u.bbox.left ? px - w - gap : px + gap, u.bbox.top + 14 * devicePixelRatio);
    }
    ctx.restore();
  };
  const opts: uPlot.Options = {
    width: width(el),
    height: 300,
    scales: { x: { time: false, range: () => [lo - pad, hi + pad] }, y: { range: (_u, lo, hi2) => [lo - (hi2 - lo) * 0.1 - 1, hi2 + (hi2 - lo) * 0.1 + 1] } },
    series: [
      { label: "predicted time (s)" },
      { label: "front", stroke: color(0), width: 2, spanGaps: true, points: { show: true, size: 7, fill: color(0) } },
      { label: "other types", stroke: color(1), paths: () => null, points: { show: true, size: 7, fill: color(1) } },
      { label: "choice", stroke: "#000", width: 3, paths: () => null, points: { show: true, size: 14, width: 3, fill: "transparent" } },
    ],
    axes: [{ label: "predicted time (s)" }, { label: "predicted energy (J)", size: 70 }],
    hooks: {
      draw: [whisk],
      setCursor: [
        (u: uPlot) => {
          const i = u.cursor.idx;
          if (i === null || i === undefined) return onHover(null);
          const x = xs[i];
          onHover(all.find((p) => p.t === x) || null);
        },
      ],
    },
  };
  const u = new uPlot(opts, data, el);
  // What was handed to uPlot, for tests and for a check by hand.
  const pairs = (k: number) => Array.from(u.data[0] as ArrayLike<number>, (x, i) => [x, u.data[k][i]]).filter((p) => p[1] !== null && p[1] !== undefined);
  el.dataset.front = JSON.stringify(pairs(1));
  el.dataset.choice = JSON.stringify(pairs(3));
  return u;
}

// Log-log scatter of predicted (x) against measured (y), one series per
// group, with the y = x line.
export function scatterLog(el: HTMLElement, groups: { label: string; pts: [number, number][] }[]): uPlot {
  // every point its own x slot (two points may share an x), ascending
  const all = groups.flatMap((g, gi) => g.pts.map((p) => ({ gi, x: p[0], y: p[1] }))).sort((a, b) => a.x - b.x);
  const xs = all.map((p) => p.x);
  const cols = groups.map((_g, gi) => all.map((p) => (p.gi === gi ? p.y : null)));
  const data: uPlot.AlignedData = [xs, xs.slice(), ...cols];
  // what was handed to uPlot, for tests: [predicted, measured] pairs
  el.dataset.points = JSON.stringify(all.map((p) => [p.x, p.y]));
  return new uPlot({
    width: width(el),
    height: 360,
    scales: { x: { time: false, distr: 3 }, y: { distr: 3 } },
    series: [
      { label: "predicted step time (s)" },
      { label: "measured = predicted", stroke: "#999", dash: [4, 4], points: { show: false } },
      ...groups.map((g, i) => ({ label: g.label, stroke: color(i), paths: () => null, points: { show: true, size: 5, fill: color(i) } })),
    ],
    axes: [{ label: "predicted step time (s)", values: logTicks }, { label: "measured step time (s)", size: 70, values: logTicks }],
  }, data, el);
}
