// Runs wirespeed's speed-test page in Debian's Chromium (headless, network closed) and then
// its results page, and prints what they showed as one JSON object for web_browser.rs (and,
// with `page-only`, only the speed test, for netpath.rs's emulated paths).
//   node speedtest.mjs URL SECONDS SCREENSHOT_DIR [page-only]
import { chromium } from 'playwright-core';

const [url, seconds = '4', shots = '.', only = ''] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const out = { errors: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 1000 } });
  page.on('console', (m) => { if (m.type() === 'error') out.errors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => out.errors.push(`page: ${e.message}`));
  await page.goto(url);
  await page.waitForFunction(() => !document.getElementById('client').textContent.startsWith('Finding'));
  await page.click('details summary');
  await page.fill('#seconds', seconds);
  await page.click('#start');
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null,
    { timeout: 120000 });
  const text = (sel) => page.textContent(sel);
  Object.assign(out, {
    state: await page.evaluate(() => document.body.dataset.state),
    status: await text('#status'),
    client: await text('#client'),
    dl: parseFloat(await text('#dl')),
    ul: parseFloat(await text('#ul')),
    ping: parseFloat(await text('#ping')),
    jitter: parseFloat(await text('#jitter')),
    latDown: parseFloat(await text('#lat-dl')),
    latUp: parseFloat(await text('#lat-ul')),
    grade: await text('#grade'),
    id: await text('#result-id'),
    note: await text('#source-note'),
  });
  await page.screenshot({ path: `${shots}/speedtest.png`, fullPage: true });
  if (only !== 'page-only') await resultsAndPhone(page);
} catch (e) {
  out.errors.push(`driver: ${e.message}`);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));

// The results page the test's link leads to, then the speed-test page on a phone.
async function resultsAndPhone(page) {
  await page.click('#result-link');
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state));
  Object.assign(out, await page.evaluate(() => {
    const inked = [...document.querySelectorAll('canvas')].filter((c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
      return false;
    }).length;
    const rows = [...document.querySelectorAll('#rows tr')];
    return {
      resultsState: document.body.dataset.state,
      rows: rows.map((r) => [...r.children].map((td) => td.textContent)),
      marked: rows.filter((r) => r.classList.contains('mark')).map((r) => r.dataset.id),
      markedCells: rows.filter((r) => r.classList.contains('mark')).map((r) => [...r.children].map((td) => td.textContent)),
      inkedCharts: inked,
      injected: document.querySelectorAll('#rows img, #rows script, #rows b').length,
      pwned: window.__pwned === 1,
    };
  }));
  await page.screenshot({ path: `${shots}/results.png`, fullPage: true });

  // A phone in dark mode: nothing wider than the screen, light text on a dark page.
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'dark', isMobile: true });
  const small = await phone.newPage();
  small.on('pageerror', (e) => out.errors.push(`phone: ${e.message}`));
  await small.goto(url);
  out.phone = await small.evaluate(() => {
    const lum = (c) => { const [r, g, b] = c.match(/\d+/g).map(Number); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
    const style = getComputedStyle(document.documentElement);
    return {
      overflow: document.documentElement.scrollWidth - window.innerWidth,
      background: lum(style.backgroundColor),
      text: lum(style.color),
    };
  });
  await small.screenshot({ path: `${shots}/phone-dark.png`, fullPage: true });
  await phone.close();
}
