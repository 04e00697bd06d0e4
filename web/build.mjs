// build.mjs - bundle the dashboard into OUTDIR (default ../build/web):
// index.html (which names the hashed files), assets/main-HASH.js and
// assets/main-HASH.css, each with a .gz twin that hetpoold sends to
// clients accepting gzip, and uPlot's license.  `node build.mjs OUTDIR`; `npm run check` type
// checks (esbuild strips types without checking them).
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync, readdirSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] || join(here, "..", "build", "web"));
const assets = join(out, "assets");

const uplotVersion = JSON.parse(readFileSync(join(here, "node_modules", "uplot", "package.json"), "utf8")).version;
const uplotLicense = `uplot-${uplotVersion}-LICENSE.txt`;

rmSync(out, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });
copyFileSync(join(here, "node_modules", "uplot", "LICENSE"), join(assets, uplotLicense));
const result = await esbuild.build({
  entryPoints: [join(here, "src", "main.ts")],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2020"],
  outdir: assets,
  entryNames: "[name]-[hash]",
  metafile: true,
  legalComments: "none",
  // uPlot's notice (MIT); its full text is served beside the bundle
  banner: { js: `/*! uPlot ${uplotVersion} (c) Leon Sorokin, MIT License: /assets/${uplotLicense} */` },
  logLevel: "warning",
});
const names = Object.keys(result.metafile.outputs).map((p) => basename(p));
// (the license file, named by uPlot's version, is the one asset not named by its hash)
const js = names.find((n) => n.endsWith(".js"));
const css = names.find((n) => n.endsWith(".css"));
if (!js || !css) throw new Error("esbuild made no js or css: " + names.join(", "));
const html = readFileSync(join(here, "index.html"), "utf8")
  .replace("%CSS%", "/assets/" + css)
  .replace("%JS%", "/assets/" + js);
writeFileSync(join(out, "index.html"), html);
let total = 0;
for (const [dir, files] of [[out, ["index.html"]], [assets, readdirSync(assets)]]) {
  for (const f of files) {
    const gz = gzipSync(readFileSync(join(dir, f)), { level: 9 });
    writeFileSync(join(dir, f + ".gz"), gz);
    total += gz.length;
  }
}
console.log(`web: ${out} (${names.join(", ")}; ${(total / 1024).toFixed(1)} KiB gzipped)`);
