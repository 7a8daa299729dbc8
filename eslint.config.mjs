// ESLint for the page's scripts, webui/static/*.js (`make lint`; the versions are pinned in package.json).
// The scripts are not modules: Gradio runs each as a js_on_load body or a js= function, and the
// player's files are joined into one body (webui/views/player_assets.py), so a file may use the top-level
// functions and constants another file declares; `element`, `props`, `watch` and `trigger` come
// from Gradio. Everything else is ESLint's recommended rules, with the browser's globals.
import fs from "node:fs";
import path from "node:path";
import js from "@eslint/js";
import globals from "globals";

const STATIC = "webui/static";
const GRADIO = {element: "readonly", props: "readonly", watch: "readonly", trigger: "readonly"};
const FILLED_BY_PYTHON = {"blind_region.js": ["HALF"], "listen.js": ["CW_LISTEN"], "page.js": ["TOAST_TITLES", "VIEW_WORDS", "EXAMPLE_WORDS"]}; // webui/tabs/abx_page.py, webui/views/listen_page.py and webui/app.py put these in before the page gets it
const TOP_LEVEL = /^(?:async\s+)?(?:function\*?\s+|(?:const|let|var|class)\s+)([A-Za-z_$][\w$]*)/gm;

const files = fs.readdirSync(STATIC).filter((name) => name.endsWith(".js")).sort();
const declared = Object.fromEntries(
  files.map((name) => [name, [...fs.readFileSync(path.join(STATIC, name), "utf8").matchAll(TOP_LEVEL)].map((m) => m[1])]),
);

// The names the other files declare, as read-only globals of `name` (not its own: no-redeclare).
function shared(name) {
  const out = Object.fromEntries((FILLED_BY_PYTHON[name] || []).map((n) => [n, "readonly"]));
  for (const [other, names] of Object.entries(declared)) {
    if (other === name) continue;
    for (const n of names) if (!declared[name].includes(n)) out[n] = "readonly";
  }
  return out;
}

export default [
  {files: [`${STATIC}/*.js`], ...js.configs.recommended},
  ...files.map((name) => ({
    files: [`${STATIC}/${name}`],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: {...globals.browser, ...GRADIO, ...shared(name)},
    },
    rules: {
      "no-unused-vars": ["error", {vars: "local", args: "after-used", caughtErrors: "none"}], // top-level names serve other files
    },
  })),
];
