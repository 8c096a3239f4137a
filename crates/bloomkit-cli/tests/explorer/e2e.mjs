// Drives the explorer page in headless Chromium as a visitor would, and prints what the page
// showed as one JSON object. tests/it/explorer.rs starts the server, computes the library's own
// answers natively, runs this script, and compares; this script only observes.
//
// Input (stdin, JSON): { url, playwright, chromium, screenshot, phoneScreenshot, queryWords,
// timingKinds }. Output (stdout, JSON): see `report` below.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const config = JSON.parse(readFileSync(0, "utf8"));
const { chromium } = createRequire(config.playwright + "/")("playwright-core");

// The whole run is bounded here as well as by the Rust test's deadline.
const watchdog = setTimeout(() => {
  console.error("e2e.mjs: gave up after 240 s");
  process.exit(2);
}, 240_000);

const report = { problems: [], queries: [] };

const browser = await chromium.launch({
  executablePath: config.chromium,
  headless: true,
  chromiumSandbox: false,
  // Without the background-networking flags Chromium tries to reach Google's servers, which
  // a closed network refuses, and some of those refusals reach the console.
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
  ],
});

try {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  watch(page, "desktop");
  await page.goto(config.url, { waitUntil: "load" });
  await page.waitForSelector("body[data-ready='1']", { timeout: 30_000 });

  // -- the small filter: add kiwi with the keyboard alone --------------------------------
  report.bitsBefore = await bits(page);
  await page.keyboard.press("Tab");
  report.firstFocus = await page.evaluate(() => document.activeElement && document.activeElement.id);
  await page.keyboard.type("kiwi");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#verdict[data-kind='add'][data-word='kiwi']", { timeout: 10_000 });
  report.kiwiBadges = await page.$$eval("#figure .badge", (bs) => bs.map((b) => Number(b.dataset.position)));
  report.bitsAfter = await bits(page);
  report.chips = await page.$$eval("#chips button", (bs) => bs.map((b) => b.textContent));

  // -- queries of words never added -------------------------------------------------------
  for (const word of config.queryWords) {
    await page.fill("#word", word);
    await page.click("#query");
    report.queries.push(await verdict(page, word));
  }
  // A chip queries its word.
  await page.click("#chips button:has-text('apple')");
  report.chipQuery = await verdict(page, "apple");
  // The play button replays the false positive on the starting state.
  report.playLabel = await page.textContent("#play");
  await page.click("#play");
  const fpWord = await page.inputValue("#word");
  report.play = await verdict(page, fpWord);
  report.bitsAfterPlay = await bits(page);

  // -- the rate against k: the sliders by keyboard ------------------------------------------
  await page.focus("#k");
  await page.keyboard.press("ArrowRight");
  report.curveK = await page.inputValue("#k");
  report.curveRate = Number(await page.getAttribute("#formula", "data-rate"));

  // -- the real filter: blocked at 1% over 100,000 keys ----------------------------------------
  report.real = await build(page, "blocked", 100_000, "0.01");
  // Overfill to 2× with the keyboard: four steps of 0.25.
  await page.focus("#overfill");
  for (let i = 0; i < 4; i++) await page.keyboard.press("ArrowRight");
  await page.waitForSelector("#real-results[data-inserted='200000']", { timeout: 60_000 });
  report.overfilled = await results(page);

  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: config.screenshot, fullPage: true });

  // -- timings at a million keys --------------------------------------------------------------
  report.timings = [];
  for (const kind of config.timingKinds) {
    report.timings.push(await build(page, kind, 1_000_000, "0.01"));
  }

  // -- phone width ------------------------------------------------------------------------------
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const small = await phone.newPage();
  watch(small, "phone");
  await small.goto(config.url, { waitUntil: "load" });
  await small.waitForSelector("body[data-ready='1']", { timeout: 30_000 });
  report.phone = await small.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    figureWidth: document.getElementById("figure").getBoundingClientRect().width,
  }));
  await small.screenshot({ path: config.phoneScreenshot, fullPage: true });
} catch (e) {
  report.problems.push(`the script failed: ${e.stack || e}`);
} finally {
  await browser.close();
  clearTimeout(watchdog);
}
process.stdout.write(JSON.stringify(report) + "\n");

// Console errors, uncaught exceptions, failed requests and error statuses, as problems.
function watch(page, where) {
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") report.problems.push(`${where} console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => report.problems.push(`${where} uncaught: ${e.message}`));
  page.on("requestfailed", (r) => report.problems.push(`${where} request failed: ${r.url()} ${r.failure() && r.failure().errorText}`));
  page.on("response", (r) => {
    if (r.status() >= 400) report.problems.push(`${where} HTTP ${r.status()}: ${r.url()}`);
  });
}

async function bits(page) {
  return page.$$eval("#figure rect.cell", (cells) => cells.map((c) => Number(c.dataset.bit)));
}

async function verdict(page, word) {
  const selector = `#verdict[data-kind='query'][data-done='1'][data-word=${JSON.stringify(word)}]`;
  await page.waitForSelector(selector, { timeout: 15_000 });
  return page.$eval("#verdict", (v) => ({
    word: v.dataset.word,
    answer: v.dataset.answer,
    falsePositive: v.dataset.falsePositive === "true",
    stoppedAt: v.dataset.stoppedAt === "" ? null : Number(v.dataset.stoppedAt),
    text: v.textContent,
    badges: [...document.querySelectorAll("#figure .badge")].map((b) => Number(b.dataset.position)),
    steps: [...document.querySelectorAll("#steps li")].map((li) => li.textContent),
  }));
}

async function build(page, kind, keys, rate) {
  await page.selectOption("#kind", kind);
  await page.fill("#keys", String(keys));
  await page.selectOption("#rate", rate);
  await page.evaluate(() => { delete document.getElementById("real-status").dataset.done; });
  await page.click("#build");
  await page.waitForSelector("#real-status[data-done]", { timeout: 120_000 });
  const status = await page.textContent("#real-status");
  return { ...(await results(page)), status, requested: { kind, keys } };
}

async function results(page) {
  return page.$eval("#real-results", (dl) => ({
    kind: dl.dataset.kind,
    inserted: Number(dl.dataset.inserted),
    measured: Number(dl.dataset.measured),
    predicted: Number(dl.dataset.predicted),
    falseNegatives: Number(dl.dataset.falseNegatives),
    ms: dl.dataset.ms === undefined ? null : Number(dl.dataset.ms),
    text: dl.textContent,
  }));
}
