// The web console: sign in, then Usage, API keys, Budget and, for admins, Users. It calls the
// API of its own origin with the access token, which lives in sessionStorage (gone with the
// tab) and never in localStorage or a cookie. Preact with htm renders; d3-scale does the
// chart's scales; the chart itself is plain SVG.
import { html, render, useState, useEffect, useCallback, useRef } from './vendor/preact-htm.js';
import { scaleBand, scaleLinear } from './vendor/d3-scale.js';

const TOKEN_KEY = 'app.console.token';

// ---- formatting -------------------------------------------------------------------------

const intFmt = new Intl.NumberFormat('en-US');
const dollars2 = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 });
const dollarsSmall = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumSignificantDigits: 3 });

/** A whole number with thousands separated: 12,345. */
export const int = (n) => intFmt.format(n || 0);

/** Dollars: cents from $1 up ($12.50), three significant digits below ($0.0123), $0.00 for nothing. */
export function money(v) {
  if (v == null) return '—';
  if (v === 0) return '$0.00';
  return Math.abs(v) >= 1 ? dollars2.format(v) : dollarsSmall.format(v);
}

/** A budget as the Monthly budget field takes it: plain decimals, never an exponent (String()
 * writes 1e-7 for $0.0000001, which the field refuses). Budgets have at most 10 decimals. */
export const amount = (v) => (v == null ? '' : v.toFixed(10).replace(/\.?0+$/, ''));

const dateFmt = new Intl.DateTimeFormat('en-US', { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });
/** A date or time as "Nov 25, 2026" (UTC, as the API's days and months are). */
export function day(value) {
  if (!value) return '—';
  const d = new Date(value.length === 10 ? value + 'T00:00:00Z' : value);
  return Number.isNaN(d.getTime()) ? value : dateFmt.format(d);
}

// ---- the API ----------------------------------------------------------------------------

class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The message of an error envelope {statusCode, message: string | string[], error}. */
function messageOf(body, status) {
  if (body && Array.isArray(body.message)) return body.message.join('; ');
  if (body && typeof body.message === 'string') return body.message;
  return `The server answered ${status}`;
}

/** api calls the app's API with the access token and returns the answer's JSON; a failure
 * throws an APIError with the envelope's message. */
async function api(token, method, path, body) {
  return (await request(token, method, path, body)).data;
}

/** request is api that also returns the path of the next page, from a Link rel="next" header. */
async function request(token, method, path, body) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit' });
  } catch {
    throw new APIError(0, 'The server could not be reached; try again.');
  }
  if (res.status === 204) return { data: null, next: null };
  if (res.status === 401 && token) window.dispatchEvent(new Event('console:expired')); // the App signs out
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new APIError(res.status, messageOf(data, res.status));
  const next = /<([^>]+)>\s*;\s*rel="next"/.exec(res.headers.get('Link') || '');
  // Only a path of this origin's API is followed.
  return { data, next: next && next[1].startsWith('/api/') ? next[1] : null };
}

/** useLoad runs load() when its deps change and keeps {data, error, loading}. */
function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (err) => live && setState({ data: null, error: err.message, loading: false }),
    );
    return () => { live = false; };
  }, [...deps, tick]);
  return [state, () => setTick((t) => t + 1)];
}

// ---- sign in ----------------------------------------------------------------------------

function SignIn({ onSignedIn, notice }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await api(null, 'POST', '/api/auth/login', { email, password });
      onSignedIn(res.accessToken, res.user);
    } catch (err) {
      setError(err.message);
      setBusy(false);
    }
  };
  return html`
    <main>
      <form class="signin" onSubmit=${submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to the console</h1>
        <div class="field">
          <label for="signin-email">Email</label>
          <input id="signin-email" type="text" inputmode="email" autocomplete="username" spellcheck="false" required value=${email}
            onInput=${(e) => setEmail(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="signin-password">Password</label>
          <input id="signin-password" type="password" autocomplete="current-password" required value=${password}
            onInput=${(e) => setPassword(e.currentTarget.value)} />
        </div>
        ${notice && !error && html`<p class="muted" role="status">${notice}</p>`}
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <button type="submit" disabled=${busy}>Sign in</button>
      </form>
    </main>`;
}

/** One figure of a .stats block: a group named by its label, holding the label and the value. */
function Stat({ id, label, children }) {
  return html`<div class="stat" role="group" aria-labelledby=${id}>
    <div class="label" id=${id}>${label}</div><div class="value">${children}</div></div>`;
}

// ---- usage ------------------------------------------------------------------------------

const CHART = { width: 720, height: 240, top: 12, right: 44, bottom: 28, left: 56 };

/** The chart of cost (bars) and requests (dots) per day: SVG, one mark per day with a <title>. */
function UsageChart({ days, period }) {
  const { width, height, top, right, bottom, left } = CHART;
  const x = scaleBand().domain(days.map((d) => d.date)).range([left, width - right]).paddingInner(0.2).paddingOuter(0.1);
  const maxCost = Math.max(0, ...days.map((d) => d.cost));
  const maxReq = Math.max(0, ...days.map((d) => d.requests));
  const yCost = scaleLinear().domain([0, maxCost || 1]).nice(4).range([height - bottom, top]);
  const yReq = scaleLinear().domain([0, maxReq || 1]).nice(4).range([height - bottom, top]);
  const costTicks = yCost.ticks(4);
  const reqTicks = yReq.ticks(4).filter((t) => Number.isInteger(t));
  const step = Math.max(1, Math.ceil(days.length / 6));
  const labelled = days.filter((_, i) => i % step === 0 || i === days.length - 1);
  const name = `Daily usage, last ${period} days: cost (bars, left axis) and requests (dots, right axis) per UTC day`;
  return html`
    <figure>
      <svg class="chart" role="img" aria-label=${name} viewBox="0 0 ${width} ${height}" preserveAspectRatio="xMidYMid meet">
        ${costTicks.map((t) => html`
          <g>
            <line class="grid" x1=${left} x2=${width - right} y1=${yCost(t)} y2=${yCost(t)} />
            <text class="axis" x=${left - 6} y=${yCost(t) + 4} text-anchor="end">${money(t)}</text>
          </g>`)}
        ${reqTicks.map((t) => html`
          <text class="axis" x=${width - right + 6} y=${yReq(t) + 4}>${int(t)}</text>`)}
        ${labelled.map((d) => html`
          <text class="axis" x=${x(d.date) + x.bandwidth() / 2} y=${height - 8} text-anchor="middle">${d.date.slice(5)}</text>`)}
        ${days.map((d) => html`
          <g class="day" data-date=${d.date}>
            <title>${`${d.date}: ${money(d.cost)}, ${int(d.requests)} requests, ${int(d.tokens)} tokens`}</title>
            <rect x=${x(d.date)} y=${top} width=${x.bandwidth()} height=${height - bottom - top} fill="transparent" />
            <rect class="bar" x=${x(d.date)} y=${yCost(d.cost)} width=${x.bandwidth()}
              height=${Math.max(0, height - bottom - yCost(d.cost))} />
            ${d.requests > 0 && html`<circle class="dot" cx=${x(d.date) + x.bandwidth() / 2} cy=${yReq(d.requests)}
              r=${Math.min(4, Math.max(2, x.bandwidth() / 3))} />`}
          </g>`)}
      </svg>
      <figcaption><span class="key-cost">Cost per day</span><span class="key-req">Requests per day</span></figcaption>
    </figure>`;
}

function Usage({ token }) {
  const [period, setPeriod] = useState(30);
  const [state] = useLoad(() => Promise.all([
    api(token, 'GET', `/api/ai/usage?days=${period}`),
    api(token, 'GET', `/api/ai/usage/daily?days=${period}`),
    api(token, 'GET', `/api/ai/usage/providers?days=${period}`),
  ]), [token, period]);
  const [totals, daily, providers] = state.data || [];
  return html`
    <h1>Usage</h1>
    <div class="field">
      <label for="usage-days">Days</label>
      <select id="usage-days" value=${String(period)} onChange=${(e) => setPeriod(Number(e.currentTarget.value))}>
        <option value="7">7</option>
        <option value="30">30</option>
        <option value="90">90</option>
      </select>
    </div>
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
    ${state.loading && !state.data && html`<p class="muted" role="status">Loading usage…</p>`}
    ${totals && html`
      <section aria-label="Totals">
        <div class="stats">
          <${Stat} id="total-requests" label="Requests">${int(totals.totalRequests)}<//>
          <${Stat} id="total-tokens" label="Tokens">${int(totals.totalTokens)}<//>
          <${Stat} id="total-cost" label="Cost">${money(totals.totalCost)}<//>
        </div>
      </section>
      <h2>Per day</h2>
      <${UsageChart} days=${daily} period=${period} />
      <h2 id="by-model">By provider and model</h2>
      ${providers.length === 0
        ? html`<p class="muted">No calls in the last ${period} days.</p>`
        : html`
        <div class="table-wrap">
          <table aria-labelledby="by-model">
            <thead><tr><th scope="col">Provider</th><th scope="col">Model</th><th scope="col" class="num">Requests</th>
              <th scope="col" class="num">Tokens</th><th scope="col" class="num">Cost</th></tr></thead>
            <tbody>
              ${providers.map((p) => html`
                <tr key=${p.provider + '/' + p.model}>
                  <td>${p.provider}</td><td>${p.model}</td><td class="num">${int(p.requestCount)}</td>
                  <td class="num">${int(p.totalTokens)}</td><td class="num">${money(p.cost)}</td>
                </tr>`)}
            </tbody>
          </table>
        </div>`}`}`;
}

// ---- API keys ---------------------------------------------------------------------------

/** A key's expiry: never, its day, or "expired" and its day once past (an expired key is
 * refused, and still counts among the user's keys until it is revoked). */
function expiry(expiresAt) {
  if (!expiresAt) return 'never';
  return new Date(expiresAt).getTime() <= Date.now() ? `expired ${day(expiresAt)}` : day(expiresAt);
}

function Keys({ token }) {
  const [state, reload] = useLoad(() => api(token, 'GET', '/api/keys'), [token]);
  const [name, setName] = useState('');
  const [created, setCreated] = useState(null);
  const [error, setError] = useState(null);
  const [copied, setCopied] = useState('');
  const create = async (e) => {
    e.preventDefault();
    setError(null);
    setCopied('');
    try {
      const k = await api(token, 'POST', '/api/keys', { name });
      setCreated(k);
      setName('');
      reload();
    } catch (err) {
      setError(err.message);
    }
  };
  const revoke = async (k) => {
    if (!window.confirm(`Revoke the key "${k.name}"? Programs using it stop working.`)) return;
    setError(null);
    try {
      await api(token, 'DELETE', `/api/keys/${encodeURIComponent(k.id)}`);
      if (created && created.id === k.id) setCreated(null);
      reload();
    } catch (err) {
      setError(err.message);
    }
  };
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.key);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('The browser refused the clipboard: select the key and copy it.');
    }
  };
  const keys = state.data || [];
  return html`
    <h1>API keys</h1>
    <p class="muted">A key acts as you on the AI routes and <code>/v1</code> (OpenAI's SDKs: <code>Authorization: Bearer sk-app-…</code>).</p>
    <form class="row" onSubmit=${create}>
      <div class="field">
        <label for="key-name">Key name</label>
        <input id="key-name" required value=${name} onInput=${(e) => setName(e.currentTarget.value)} />
      </div>
      <div class="field"><button type="submit">Create key</button></div>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${created && html`
      <div class="secret" role="status">
        <span>New key <strong>${created.name}</strong>, shown this once:</span>
        <code aria-label="New key secret">${created.key}</code>
        <button type="button" class="secondary" onClick=${copy}>Copy</button>
        <button type="button" class="secondary" onClick=${() => { setCreated(null); setCopied(''); }}>Done</button>
        ${copied && html`<span>${copied}</span>`}
      </div>`}
    <h2 id="keys-title">Your keys</h2>
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
    ${!state.loading && keys.length === 0 && html`<p class="muted">No keys yet.</p>`}
    ${keys.length > 0 && html`
      <div class="table-wrap">
        <table aria-labelledby="keys-title">
          <thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Created</th>
            <th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="skip">Actions</span></th></tr></thead>
          <tbody>
            ${keys.map((k) => html`
              <tr key=${k.id}>
                <td>${k.name}</td><td><code>${k.prefix}</code></td><td>${day(k.createdAt)}</td>
                <td>${k.lastUsedAt ? day(k.lastUsedAt) : 'never'}</td>
                <td>${expiry(k.expiresAt)}</td>
                <td><button type="button" class="danger" onClick=${() => revoke(k)}>Revoke</button></td>
              </tr>`)}
          </tbody>
        </table>
      </div>`}`;
}

// ---- budget -----------------------------------------------------------------------------

function Budget({ token }) {
  const [state] = useLoad(() => api(token, 'GET', '/api/ai/budget'), [token]);
  const b = state.data;
  return html`
    <h1>Budget</h1>
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
    ${b && html`
      <div class="stats">
        <${Stat} id="budget-limit" label="Limit">${b.limit == null ? 'No limit' : money(b.limit)}<//>
        <${Stat} id="budget-spent" label="Spent">${money(b.spent)}<//>
        <${Stat} id="budget-remaining" label="Remaining">${b.remaining == null ? 'No limit' : money(b.remaining)}<//>
        <${Stat} id="budget-resets" label="Resets">${day(b.resetsAt)}<//>
      </div>
      ${b.reserved > 0 && html`<p class="muted">${money(b.reserved)} is held by calls in progress.</p>`}
      <p class="muted">The budget is per UTC calendar month; an admin sets it.</p>`}`;
}

// ---- users (admins) ---------------------------------------------------------------------

function UserRow({ token, user, me, onChanged }) {
  const [limit, setLimit] = useState(amount(user.budget));
  const [note, setNote] = useState(null);
  // Show a budget changed elsewhere (a Save answered). Not on mount: effects run after paint,
  // and resetting then would wipe what was typed in the meantime.
  const shown = useRef(user.budget);
  useEffect(() => {
    if (shown.current === user.budget) return;
    shown.current = user.budget;
    setLimit(amount(user.budget));
  }, [user.budget]);
  const save = async (e) => {
    e.preventDefault();
    // Read from the form, not the state: a click right after typing may come before the
    // re-render that would give this function the typed value.
    const text = String(new FormData(e.currentTarget).get('limit') ?? '').trim().replace(/^\$/, '');
    // Plain decimal dollars only: Number() would also take 0x10, 0b11 and 1e3.
    if (text !== '' && !/^(\d+(\.\d*)?|\.\d+)$/.test(text)) {
      setNote({ error: true, text: 'Enter an amount of dollars (such as 25 or 0.5), or nothing for no budget of their own.' });
      return;
    }
    const value = text === '' ? null : Number(text);
    try {
      const row = await api(token, 'PUT', `/api/admin/users/${encodeURIComponent(user.id)}/budget`, { limit: value });
      setNote({ error: false, text: 'Saved.' });
      onChanged(row);
    } catch (err) {
      setNote({ error: true, text: err.message });
    }
  };
  const admin = user.roles.includes('admin');
  const toggleAdmin = async () => {
    try {
      const row = await api(token, admin ? 'DELETE' : 'PUT', `/api/admin/users/${encodeURIComponent(user.id)}/roles/admin`);
      setNote({ error: false, text: admin ? 'Admin revoked.' : 'Admin granted.' });
      onChanged(row);
    } catch (err) {
      setNote({ error: true, text: err.message });
    }
  };
  return html`
    <tr>
      <td class="user-cell">${user.email}${user.name && html`<br /><span class="muted">${user.name}</span>`}</td>
      <td>${user.roles.join(', ')}</td>
      <td class="num">${money(user.monthSpent)}</td>
      <td>
        <form class="row" onSubmit=${save}>
          <input class="budget-input" name="limit" aria-label="Monthly budget" inputmode="decimal" placeholder="none"
            value=${limit} onInput=${(e) => setLimit(e.currentTarget.value)} />
          <button type="submit">Save</button>
        </form>
      </td>
      <td>
        ${user.id === me && admin
          ? html`<span class="muted">you</span>`
          : html`<button type="button" class="secondary" onClick=${toggleAdmin}>${admin ? 'Revoke admin' : 'Grant admin'}</button>`}
        ${note && html`<div class=${note.error ? 'error' : 'notice'} role=${note.error ? 'alert' : 'status'}>${note.text}</div>`}
      </td>
    </tr>`;
}

function Users({ token, me }) {
  const [state] = useLoad(() => request(token, 'GET', '/api/admin/users'), [token]);
  const [rows, setRows] = useState(null);
  const [next, setNext] = useState(null); // the next page's path, when there is one
  const [moreError, setMoreError] = useState(null);
  useEffect(() => {
    setRows(state.data && state.data.data);
    setNext(state.data && state.data.next);
  }, [state.data]);
  const changed = useCallback((row) => setRows((rs) => rs.map((r) => (r.id === row.id ? row : r))), []);
  const loadMore = async () => {
    try {
      const page = await request(token, 'GET', next);
      setRows((rs) => [...rs, ...page.data]);
      setNext(page.next);
      setMoreError(null);
    } catch (err) {
      setMoreError(err.message);
    }
  };
  return html`
    <h1>Users</h1>
    <p class="muted">Monthly budgets in US dollars; empty: no budget of their own (the default applies, if one is configured).</p>
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
    ${rows && html`
      <div class="table-wrap">
        <table aria-label="Users">
          <thead><tr><th scope="col">Email</th><th scope="col">Roles</th><th scope="col" class="num">Spent this month</th>
            <th scope="col">Monthly budget</th><th scope="col">Admin</th></tr></thead>
          <tbody>
            ${rows.map((u) => html`<${UserRow} key=${u.id} token=${token} user=${u} me=${me} onChanged=${changed} />`)}
          </tbody>
        </table>
      </div>
      ${moreError && html`<p class="error" role="alert">${moreError}</p>`}
      ${next && html`<p><button type="button" class="secondary" onClick=${loadMore}>Load more users</button></p>`}`}`;
}

// ---- the shell --------------------------------------------------------------------------

const VIEWS = [
  { id: 'usage', label: 'Usage' },
  { id: 'keys', label: 'API keys' },
  { id: 'budget', label: 'Budget' },
  { id: 'users', label: 'Users', admin: true },
];

function currentView() {
  const id = location.hash.replace(/^#\/?/, '');
  return VIEWS.some((v) => v.id === id) ? id : 'usage';
}

function Console({ token, user, onSignOut }) {
  const [view, setView] = useState(currentView());
  useEffect(() => {
    const onHash = () => setView(currentView());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  const isAdmin = (user.roles || []).includes('admin');
  const views = VIEWS.filter((v) => !v.admin || isAdmin);
  const shown = views.some((v) => v.id === view) ? view : 'usage';
  useEffect(() => {
    const v = VIEWS.find((x) => x.id === shown);
    document.title = `${v.label} · app console`;
  }, [shown]);
  let page;
  if (shown === 'keys') page = html`<${Keys} token=${token} />`;
  else if (shown === 'budget') page = html`<${Budget} token=${token} />`;
  else if (shown === 'users') page = html`<${Users} token=${token} me=${user.id} />`;
  else page = html`<${Usage} token=${token} />`;
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header>
      <span class="brand">app console</span>
      <nav aria-label="Console">
        <ul>
          ${views.map((v) => html`
            <li><a href="#/${v.id}" aria-current=${v.id === shown ? 'page' : undefined}>${v.label}</a></li>`)}
        </ul>
      </nav>
      <span class="who">${user.email}</span>
      <button type="button" class="secondary" onClick=${onSignOut}>Sign out</button>
    </header>
    <main id="main" tabindex="-1">${page}</main>`;
}

function App() {
  const [session, setSession] = useState(() => {
    const token = sessionStorage.getItem(TOKEN_KEY);
    return token ? { token, user: null } : null;
  });
  // A token kept in this tab: who it is now (roles may have changed).
  useEffect(() => {
    if (!session || session.user) return;
    api(session.token, 'GET', '/api/auth/profile').then(
      (user) => setSession({ token: session.token, user }),
      () => { sessionStorage.removeItem(TOKEN_KEY); setSession(null); },
    );
  }, [session]);
  const [notice, setNotice] = useState(null);
  const signedIn = (token, user) => {
    sessionStorage.setItem(TOKEN_KEY, token);
    setNotice(null);
    setSession({ token, user });
  };
  const signOut = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    setSession(null);
    if (location.hash) history.replaceState(null, '', location.pathname);
  };
  // The API refused the token (expired, or the account is gone): back to the sign-in form.
  useEffect(() => {
    const expired = () => {
      if (!sessionStorage.getItem(TOKEN_KEY)) return;
      signOut();
      setNotice('Your session has ended; sign in again.');
    };
    window.addEventListener('console:expired', expired);
    return () => window.removeEventListener('console:expired', expired);
  }, []);
  if (!session) return html`<${SignIn} onSignedIn=${signedIn} notice=${notice} />`;
  if (!session.user) return html`<main><p class="muted" role="status">Loading…</p></main>`;
  return html`<${Console} token=${session.token} user=${session.user} onSignOut=${signOut} />`;
}

const root = document.getElementById('app');
root.textContent = ''; // the "Loading" placeholder of the page
render(html`<${App} />`, root);
performance.mark('console-interactive'); // the first view is rendered and answers input

