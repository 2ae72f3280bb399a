// The console in a real browser (Chromium through playwright-core), driven as a person does: by
// labels, roles and names. Run by .ci/console-check.sh with one JSON argument:
//   {base, chromium, playwright, user: {email, password}, admin: {email, password}}
// where user has made calls on three providers and admin has the role admin. Prints what it
// checks; exits 1 at the first difference, a browser console error or a request to another
// origin.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const cfg = JSON.parse(process.argv[2]);
const { chromium } = createRequire(join(cfg.playwright, 'package.json'))('playwright-core');
const origin = new URL(cfg.base).origin;
const errors = [];
const foreign = [];

function fail(msg) {
  throw new Error(msg);
}
function ok(msg) {
  console.log('ok  ' + msg);
}
const exact = (text) => new RegExp('^\\s*' + text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '\\s*$');
const number = (text) => Number(String(text).replace(/[$,\s]/g, ''));

async function api(method, path, token, body) {
  const res = await fetch(cfg.base + path, {
    method,
    headers: { Authorization: 'Bearer ' + token, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json().catch(() => null) };
}

async function login(who) {
  const res = await fetch(cfg.base + '/api/auth/login', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(who),
  });
  if (res.status !== 200) fail(`login ${who.email}: ${res.status}`);
  return (await res.json()).accessToken;
}

async function until(probe, what, ms = 8000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The money the console shows equals the API's value at the precision shown. */
function sameMoney(shown, want) {
  const text = String(shown).replace(/[$,\s]/g, '');
  const decimals = (text.split('.')[1] || '').length;
  return Math.abs(Number(text) - want) <= 0.5 * 10 ** -decimals + 1e-12;
}

async function signIn(page, who) {
  await page.getByLabel(exact('Email')).fill(who.email);
  await page.getByLabel(exact('Password')).fill(who.password);
  await page.getByRole('button', { name: exact('Sign in') }).click();
  await page.getByRole('link', { name: exact('Usage') }).waitFor();
}

async function signOut(page) {
  await page.getByRole('button', { name: exact('Sign out') }).click();
  await page.getByLabel(exact('Email')).waitFor();
  const stored = await page.evaluate(() => ({
    session: sessionStorage.length, local: localStorage.length, cookies: document.cookie,
  }));
  if (stored.session || stored.local || stored.cookies) fail(`after signing out the browser keeps ${JSON.stringify(stored)}`);
}

/** The value of a figure: the text of the group named label, less the label. */
const stat = (page, label) => ({
  textContent: async () => (await page.getByRole('group', { name: exact(label) }).textContent()).trim().slice(label.length),
  waitFor: () => page.getByRole('group', { name: exact(label) }).waitFor(),
});

/** With CONSOLE_SCREENSHOTS=dir, a screenshot of the page as name.png there (for a person). */
async function shot(page, name) {
  if (cfg.screenshots) await page.screenshot({ path: join(cfg.screenshots, name + '.png'), fullPage: true });
}

async function checkUsage(page, token, days) {
  const totals = (await api('GET', `/api/ai/usage?days=${days}`, token)).body;
  const rows = (await api('GET', `/api/ai/usage/providers?days=${days}`, token)).body;
  const daily = (await api('GET', `/api/ai/usage/daily?days=${days}`, token)).body;
  await until(async () => number(await stat(page, 'Requests').textContent()) === totals.totalRequests
    && number(await stat(page, 'Tokens').textContent()) === totals.totalTokens
    && sameMoney(await stat(page, 'Cost').textContent(), totals.totalCost), `the ${days}-day totals ${JSON.stringify(totals)}`);
  ok(`days=${days}: Requests, Tokens and Cost equal GET /api/ai/usage ${JSON.stringify(totals)}`);

  const table = page.getByRole('table', { name: /provider and model/i });
  const body = await until(async () => {
    const r = await table.getByRole('row').allInnerTexts();
    return r.length === rows.length + 1 ? r.slice(1) : null;
  }, `${rows.length} rows in the provider table`);
  rows.forEach((want, i) => {
    const cells = body[i].split('\t').map((c) => c.trim());
    if (cells[0] !== want.provider || cells[1] !== want.model || number(cells[2]) !== want.requestCount
      || number(cells[3]) !== want.totalTokens || !sameMoney(cells[4], want.cost)) {
      fail(`provider row ${i}: ${JSON.stringify(cells)}, the API says ${JSON.stringify(want)}`);
    }
  });
  ok(`days=${days}: the table equals GET /api/ai/usage/providers (${rows.length} rows)`);

  const chart = page.getByRole('img', { name: /usage/i });
  const titles = await until(async () => {
    const t = await chart.locator('title').allTextContents();
    return t.length === days ? t : null;
  }, `${days} marks in the chart`);
  daily.forEach((d, i) => {
    if (!titles[i].includes(d.date) || !titles[i].includes(`${d.requests.toLocaleString('en-US')} requests`)) {
      fail(`chart mark ${i} says ${JSON.stringify(titles[i])}, the API says ${JSON.stringify(d)}`);
    }
  });
  ok(`days=${days}: the chart has one mark per day, each titled with its date and values`);
  await shot(page, `usage-${days}`);
}

const profile = mkdtempSync(join(tmpdir(), 'console-check-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: cfg.chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  locale: 'en-US', timezoneId: 'UTC', viewport: { width: 1280, height: 900 },
});
let failed = false;
try {
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(origin) || url.startsWith('data:')) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(8000);
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push('uncaught: ' + e.message));
  page.on('dialog', (d) => d.accept());
  const loaded = [];
  page.on('requestfinished', async (req) => {
    const sizes = await req.sizes().catch(() => null);
    if (sizes) loaded.push({ url: req.url(), bytes: sizes.responseBodySize + sizes.responseHeadersSize });
  });

  // First load, three times without the cache: bytes transferred, and the time from the start
  // of navigation to the first view rendered (the app's performance mark); the median counts.
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  const times = [];
  let bytes = 0;
  for (let i = 0; i < 3; i++) {
    loaded.length = 0;
    await page.goto(cfg.base + '/console');
    await page.getByLabel(exact('Email')).waitFor();
    times.push(await page.evaluate(() => Math.round(performance.getEntriesByName('console-interactive')[0].startTime)));
    await page.waitForLoadState('networkidle');
    bytes = loaded.reduce((n, r) => n + r.bytes, 0);
  }
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: false });
  const interactive = [...times].sort((a, b) => a - b)[1];
  console.log(`first load: ${loaded.length} requests, ${(bytes / 1024).toFixed(1)} KB transferred (gzip), ` +
    `interactive after ${times.join(', ')} ms (median ${interactive} ms)`);
  if (bytes > 200 * 1024) fail(`the first load transferred ${bytes} bytes, over 200 KB`);
  if (interactive > 1000) fail(`the console took ${interactive} ms to be interactive, over 1 s`);

  // A user with calls on three providers.
  const userToken = await login(cfg.user);
  await signIn(page, cfg.user);
  ok('signed in as ' + cfg.user.email);
  if (await page.getByRole('link', { name: exact('Users') }).count()) fail('a user who is not an admin sees Users');
  ok('a user who is not an admin sees no Users');
  await page.getByRole('link', { name: exact('Usage') }).click();
  await checkUsage(page, userToken, 30);
  await page.getByLabel(exact('Days')).selectOption('7');
  await checkUsage(page, userToken, 7);

  // Readable at 360 px: nothing wider than the screen but the tables' own scrolling.
  await page.setViewportSize({ width: 360, height: 800 });
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  await shot(page, 'usage-360px');
  if (width > 360) fail(`at 360 px wide the page is ${width} px wide`);
  ok('readable at 360 px wide');
  await page.setViewportSize({ width: 1280, height: 900 });

  // API keys: create, use, revoke.
  await page.getByRole('link', { name: exact('API keys') }).click();
  const keyName = 'notebook-' + Date.now();
  await page.getByLabel(exact('Key name')).fill(keyName);
  await page.getByRole('button', { name: exact('Create key') }).click();
  const secretBox = page.getByRole('status').filter({ hasText: 'sk-app-' });
  const secret = (await secretBox.getByLabel(exact('New key secret')).textContent()).trim();
  if (!secret.startsWith('sk-app-')) fail(`the new key shows ${JSON.stringify(secret)}`);
  if (!(await secretBox.getByRole('button', { name: exact('Copy') }).isVisible())) fail('no Copy button beside the new key');
  const row = page.getByRole('row', { name: new RegExp(keyName) });
  await row.waitFor();
  if ((await page.getByRole('table').innerText()).includes(secret)) fail('the key list shows the secret');
  let models = await api('GET', '/v1/models', secret);
  if (models.status !== 200 || !Array.isArray(models.body?.data)) fail(`GET /v1/models with the new key: ${models.status}`);
  await shot(page, 'keys');
  ok(`created key ${keyName}: shown once, listed without its secret, GET /v1/models with it answers 200`);
  await row.getByRole('button', { name: exact('Revoke') }).click();
  await row.waitFor({ state: 'detached' });
  models = await api('GET', '/v1/models', secret);
  if (models.status !== 401) fail(`GET /v1/models with the revoked key: ${models.status}, want 401`);
  ok('revoked it: gone from the list, GET /v1/models with it answers 401');
  // A name is up to 100 characters, as the API counts them: 60 emoji (120 UTF-16 code units,
  // which an HTML maxlength would count) are typed and saved whole.
  const emojiName = '\u{1F511}'.repeat(60);
  await page.getByLabel(exact('Key name')).fill(emojiName);
  if ((await page.getByLabel(exact('Key name')).inputValue()) !== emojiName) fail('the Key name field cut a name of 60 emoji');
  await page.getByRole('button', { name: exact('Create key') }).click();
  const emojiBox = page.getByRole('status').filter({ hasText: 'sk-app-' });
  await emojiBox.waitFor();
  if ((await emojiBox.locator('strong').textContent()) !== emojiName) fail('the key made from a name of 60 emoji has another name');
  const emojiKey = (await api('GET', '/api/keys', userToken)).body.find((k) => k.name === emojiName);
  if (!emojiKey || (await api('DELETE', `/api/keys/${emojiKey.id}`, userToken)).status !== 204) fail('could not find and revoke the key named with 60 emoji');
  await emojiBox.getByRole('button', { name: exact('Done') }).click();
  ok('a key name of 60 emoji (120 UTF-16 units) is typed and saved whole');
  // Each key's expiry is listed (a key made on the API may have one): its day, never, or
  // expired, so that the user knows which keys no longer work. The list is answered with one
  // key's expiry moved into the past, as no key can be made expired.
  const stamp = Date.now();
  const expiring = (await api('POST', '/api/keys', userToken, { name: 'expiring-' + stamp, expiresInDays: 30 })).body;
  const lapsed = (await api('POST', '/api/keys', userToken, { name: 'lapsed-' + stamp, expiresInDays: 1 })).body;
  const never = (await api('POST', '/api/keys', userToken, { name: 'lasting-' + stamp })).body;
  const keyList = (url) => url.pathname === '/api/keys';
  await page.route(keyList, async (route) => {
    if (route.request().method() !== 'GET') return route.continue();
    const res = await route.fetch();
    const list = (await res.json()).map((k) => (k.id === lapsed.id ? { ...k, expiresAt: '2026-01-02T03:04:05.000Z' } : k));
    return route.fulfill({ response: res, json: list });
  });
  await page.reload();
  const expiresCell = async (k) => {
    const r = page.getByRole('row', { name: new RegExp(k.name) });
    await r.waitFor();
    return (await r.getByRole('cell').nth(4).textContent()).trim();
  };
  const utcDay = new Intl.DateTimeFormat('en-US', { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });
  const want = [[expiring, utcDay.format(new Date(expiring.expiresAt))], [lapsed, 'expired Jan 2, 2026'], [never, 'never']];
  for (const [k, text] of want) {
    const shown = await expiresCell(k);
    if (shown !== text) fail(`key ${k.name} shows the expiry ${JSON.stringify(shown)}, want ${JSON.stringify(text)}`);
  }
  await page.unroute(keyList);
  for (const k of [expiring, lapsed, never]) await api('DELETE', `/api/keys/${k.id}`, userToken);
  ok('each key\'s expiry is listed: its day, never, or expired');

  // Budget before, then sign out.
  await page.getByRole('link', { name: exact('Budget') }).click();
  for (const label of ['Limit', 'Spent', 'Remaining', 'Resets']) await stat(page, label).waitFor();
  await signOut(page);
  ok('signed out: the token is forgotten');

  // An admin sets the user's budget.
  await signIn(page, cfg.admin);
  // Pages: the first list is asked for one user a page, so that the console must follow the
  // API's Link to the next page to show both.
  const firstList = (url) => url.pathname === '/api/admin/users' && url.search === '';
  await page.route(firstList, async (route) => {
    route.fulfill({ response: await route.fetch({ url: cfg.base + '/api/admin/users?limit=1' }) });
  });
  await page.getByRole('link', { name: exact('Users') }).click();
  const users = page.getByRole('table', { name: 'Users' });
  await users.getByRole('row').nth(1).waitFor();
  if ((await users.getByRole('row').count()) !== 2) fail('the Users table does not show one user of the first page of one');
  await page.getByRole('button', { name: exact('Load more users') }).click();
  await until(async () => (await users.getByRole('row').count()) === 3, 'the second page of users');
  if (await page.getByRole('button', { name: exact('Load more users') }).count()) fail('Load more users is still shown after the last page');
  await page.unroute(firstList);
  ok('Users: the first page of one user, then Load more users follows the Link to the second, and stops');
  // Every row's controls are on screen, beside a 100-character name without a space.
  for (const button of await users.getByRole('button').all()) {
    const box = await button.boundingBox();
    if (!box || box.x + box.width > 1280) fail(`the Users table pushes "${await button.textContent()}" off the 1280-pixel page (x ${box && box.x})`);
  }
  ok('Users: every row\'s buttons stay on the page beside a 100-character name');
  const userRow = page.getByRole('row', { name: new RegExp(cfg.user.email.replace(/[.+]/g, '\\$&')) });
  // Only plain decimal dollars: Number() alone would save 0x10 as $16.
  await userRow.getByLabel(exact('Monthly budget')).fill('0x10');
  await userRow.getByRole('button', { name: exact('Save') }).click();
  await userRow.getByRole('alert').filter({ hasText: 'Enter an amount of dollars' }).waitFor();
  if ((await api('GET', '/api/ai/budget', userToken)).body.limit !== null) fail('0x10 was saved as a budget');
  ok('a budget written 0x10 is refused in the page, nothing saved');
  await userRow.getByLabel(exact('Monthly budget')).fill('12.5');
  await userRow.getByRole('button', { name: exact('Save') }).click();
  await userRow.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
  await shot(page, 'users');
  const budget = (await api('GET', '/api/ai/budget', userToken)).body;
  if (budget.limit !== 12.5) fail(`after Save the user's budget limit is ${budget.limit}`);
  ok(`an admin set ${cfg.user.email}'s monthly budget to $12.50`);
  // A budget below a millionth of a dollar is shown in plain decimals, as it can be saved
  // again: JavaScript's String() writes 1e-7, which the field refuses.
  const adminToken = await login(cfg.admin);
  const adminRow = (await api('GET', '/api/admin/users', adminToken)).body.find((u) => u.email === cfg.admin.email);
  if ((await api('PUT', `/api/admin/users/${adminRow.id}/budget`, adminToken, { limit: 0.0000001 })).status !== 200) fail('could not set a budget of $0.0000001');
  await page.reload();
  const tinyRow = page.getByRole('row', { name: new RegExp(cfg.admin.email.replace(/[.+]/g, '\\$&')) });
  await tinyRow.getByLabel(exact('Monthly budget')).waitFor();
  const tinyShown = await tinyRow.getByLabel(exact('Monthly budget')).inputValue();
  if (tinyShown !== '0.0000001') fail(`a budget of $0.0000001 is shown as ${JSON.stringify(tinyShown)}`);
  await tinyRow.getByRole('button', { name: exact('Save') }).click();
  await tinyRow.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
  if ((await api('PUT', `/api/admin/users/${adminRow.id}/budget`, adminToken, { limit: null })).status !== 200) fail('could not clear the admin\'s budget');
  ok('a budget of $0.0000001 is shown as 0.0000001 and saves again as it is');
  await signOut(page);

  // The user sees it.
  await signIn(page, cfg.user);
  await page.getByRole('link', { name: exact('Budget') }).click();
  await until(async () => (await stat(page, 'Limit').textContent()).trim() === '$12.50', 'Limit $12.50 on the Budget view');
  const remaining = await stat(page, 'Remaining').textContent();
  if (!sameMoney(remaining, budget.remaining)) fail(`Remaining shows ${remaining}, the API says ${budget.remaining}`);
  await shot(page, 'budget');
  ok('the user\'s Budget view shows Limit $12.50 and the API\'s Remaining');
  await signOut(page);

  if (foreign.length) fail(`requests to other origins: ${foreign.join(', ')}`);
  if (errors.length) fail(`browser console errors: ${errors.join(' | ')}`);
  ok('no browser console errors, no request to another origin');
} catch (err) {
  failed = true;
  console.error('console-check: ' + err.message.split('\n')[0]);
  if (errors.length) console.error('browser console errors: ' + errors.join(' | '));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
