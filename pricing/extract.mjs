// Writes pricing/prices.json from an unpacked @pydantic/genai-prices npm
// package (MIT): node pricing/extract.mjs PACKAGE_DIR VERSION > pricing/prices.json
// Only the model names, their match rules and prices are kept.
import { readFileSync } from "node:fs";

const [dir, version] = process.argv.slice(2);
const src = readFileSync(`${dir}/dist/index.js`, "utf8");
const start = src.indexOf("const E = [");
const end = src.indexOf("\n], J = {", start);
const providers = Function(`return ${src.slice(start + "const E = ".length, end + 2)}`)();
// The agents' own providers first, so a name two providers list gets its maker's price.
const first = ["anthropic", "openai", "google"];
providers.sort((a, b) => {
  const ia = first.indexOf(a.id), ib = first.indexOf(b.id);
  return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
});
const models = [];
for (const p of providers) {
  for (const m of p.models) {
    const list = Array.isArray(m.prices) ? m.prices : [{ prices: m.prices }];
    models.push({
      provider: p.id,
      id: m.id,
      match: m.match,
      prices: list.map((e) => ({
        since: e.constraint?.start_date ?? "",
        input: e.prices.input_mtok,
        output: e.prices.output_mtok,
        cache_read: e.prices.cache_read_mtok,
        cache_write: e.prices.cache_write_mtok,
      })),
    });
  }
}
const today = new Date().toISOString().slice(0, 10);
process.stdout.write(JSON.stringify({
  source: `@pydantic/genai-prices ${version} (npm, MIT)`,
  as_of: today,
  models,
}) + "\n");
