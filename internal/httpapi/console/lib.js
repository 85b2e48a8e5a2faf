// runstream console: shared helpers (DOM builder, formatting, API access,
// Server-Sent Events, the connection state). Plain ES module, no build step.

export const $ = (sel, root = document) => root.querySelector(sel);
const TOKEN_KEY = 'runstream.token';
export const STATUSES = ['PENDING', 'APPROVED', 'RUNNING', 'PAUSED', 'COMPLETED', 'FAILED', 'CANCELLED'];
export const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);
// A snapshot's failedSteps counts StepFailed events: failed attempts,
// each step's retries included, whether or not a later attempt succeeded.
export const FAILED_ATTEMPTS_TITLE = 'Step attempts that failed (StepFailed events), retried or not: a completed run may have some.';

// h builds an element: h('a', {href, testid, onclick}, ...children).
// Children are text or nodes; text is never parsed as HTML. Handlers are
// kept in el.handlers and called through one listener per event type, so
// patch can hand an element kept on the page its replacement's handlers.
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) on(el, k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'testid') el.dataset.testid = v;
    else if (k === 'style') Object.assign(el.style, v); // CSSOM: allowed by the CSP
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid != null && kid !== false) el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

function on(el, type, fn) {
  el.handlers ??= {};
  if (!(type in el.handlers)) el.addEventListener(type, e => el.handlers[type]?.(e));
  el.handlers[type] = fn;
}

// patch makes parent's children look like kids (fresh nodes from h, or
// text), as replaceChildren would, but keeps every node that is already
// there and only changes what differs: a live update then leaves alone the
// link under a pressed mouse button, a text selection, a focused control
// and an open <details> of the rows it did not change. Elements with a
// data-key attribute are matched by key (and may move); the others by
// position and tag.
export function patch(parent, ...kids) {
  const next = kids.flat(Infinity).filter(k => k != null && k !== false && k !== '')
    .map(k => (k instanceof Node ? k : document.createTextNode(String(k))));
  const keyOf = n => (n.nodeType === Node.ELEMENT_NODE ? n.getAttribute('data-key') : null);
  const byKey = new Map();
  for (const o of parent.childNodes) if (keyOf(o) != null) byKey.set(keyOf(o), o);
  next.forEach((n, i) => {
    const cur = parent.childNodes[i] ?? null;
    const key = keyOf(n);
    let keep = null;
    if (key != null) keep = byKey.get(key) ?? null;
    else if (cur && keyOf(cur) == null) keep = cur;
    if (keep && (keep === n || n.isConnected || keep.nodeName !== n.nodeName)) keep = null;
    if (!keep) { if (n !== cur) parent.insertBefore(n, cur); return; }
    if (key != null) byKey.delete(key);
    if (keep !== cur) parent.insertBefore(keep, cur);
    morph(keep, n);
  });
  while (parent.childNodes.length > next.length) parent.lastChild.remove();
}

// morph makes el (kept on the page) look like n (its fresh replacement).
function morph(el, n) {
  if (el.nodeType !== Node.ELEMENT_NODE) {
    if (el.nodeValue !== n.nodeValue) el.nodeValue = n.nodeValue;
    return;
  }
  for (const { name } of [...el.attributes]) if (!n.hasAttribute(name)) el.removeAttribute(name);
  for (const { name, value } of n.attributes) {
    if (name === 'style') continue;
    if (el.getAttribute(name) !== value) el.setAttribute(name, value);
  }
  // Inline styles through the CSSOM (the CSP refuses style attributes).
  if (el.style.cssText !== n.style.cssText) {
    for (const p of [...el.style]) if (!n.style.getPropertyValue(p)) el.style.removeProperty(p);
    for (const p of n.style) el.style.setProperty(p, n.style.getPropertyValue(p), n.style.getPropertyPriority(p));
  }
  for (const [type, fn] of Object.entries(n.handlers || {})) on(el, type, fn);
  for (const type of Object.keys(el.handlers || {})) if (!n.handlers?.[type]) el.handlers[type] = null;
  patch(el, ...n.childNodes);
}

// ---- formatting ----

const UNITS = [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]];
export function rel(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '—';
  const s = Math.round((Date.now() - t) / 1000);
  if (Math.abs(s) < 5) return 'just now';
  const [u, n] = UNITS.find(([, n]) => Math.abs(s) >= n);
  const v = Math.floor(Math.abs(s) / n);
  return s > 0 ? `${v}${u} ago` : `in ${v}${u}`;
}
// Times are shown relative ("5m ago"), local or UTC, as the header's
// switch says; the choice is remembered in this browser (localStorage).
const TIMES_KEY = 'runstream.times';
export const TIME_MODES = [['relative', 'Relative'], ['local', 'Local'], ['utc', 'UTC']];
let timeMode = (() => {
  try { return TIME_MODES.some(([m]) => m === localStorage.getItem(TIMES_KEY)) ? localStorage.getItem(TIMES_KEY) : 'relative'; } catch { return 'relative'; }
})();
const pad = n => String(n).padStart(2, '0');
function absolute(iso, utc) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '—';
  const [y, mo, da, hh, mi, ss] = utc
    ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()]
    : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
  return `${y}-${pad(mo)}-${pad(da)} ${pad(hh)}:${pad(mi)}:${pad(ss)}${utc ? ' UTC' : ''}`;
}
// timeText is iso in the chosen mode; the element's title has the others.
const timeText = iso => timeMode === 'relative' ? rel(iso) : absolute(iso, timeMode === 'utc');
const timeTitle = iso => `${absolute(iso, false)} local · ${absolute(iso, true)} · ${rel(iso)}`;
export const getTimeMode = () => timeMode;
export function setTimeMode(mode) {
  if (!TIME_MODES.some(([m]) => m === mode)) return;
  timeMode = mode;
  try { localStorage.setItem(TIMES_KEY, mode); } catch { /* private mode: for this page only */ }
  refreshTimes();
}
function refreshTimes() {
  for (const t of document.querySelectorAll('time[datetime]')) t.textContent = timeText(t.getAttribute('datetime'));
}
export const when = iso => iso
  ? h('time', { datetime: iso, title: timeTitle(iso) }, timeText(iso))
  : h('span', { class: 'muted' }, '—');
export const clock = d => d.toLocaleTimeString([], { hour12: false });
export function dur(ms) {
  if (ms == null || Number.isNaN(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${Math.round(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${Math.round((s % 3600) / 60)}m`;
}
export function size(n) {
  if (n == null) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${u[i]}`;
}
export const num = n => n == null ? '—' : Number(n).toLocaleString('en-US');
export const badge = (status, sub) => h('span', { class: `badge s-${(status || 'unknown').toLowerCase()}`, testid: 'status' },
  status || 'UNKNOWN', sub ? h('span', { class: 'sub', testid: 'substatus' }, ` · ${sub}`) : null);
export const staleBadge = stale => h('span', { class: 'badge stale', testid: 'stale-badge', hidden: !stale,
  title: 'The projector saw a gap and has not resynced yet: this view may be behind the store.' }, 'STALE');

// Relative times age in place; pages may add a tick of their own.
const ticks = new Set();
export function onTick(fn) { ticks.add(fn); return () => ticks.delete(fn); }
setInterval(() => {
  if (timeMode === 'relative') refreshTimes();
  for (const fn of ticks) fn();
}, 10000);

// keepFocus re-renders with fn and gives focus back to the same control,
// so a live update does not pull the keyboard out of a table.
export function keepFocus(fn) {
  const a = document.activeElement;
  const key = a?.dataset?.testid && [a.dataset.testid, a.closest('[data-key]')?.dataset.key];
  fn();
  if (!key) return;
  const scope = key[1] ? $(`[data-key="${CSS.escape(key[1])}"]`) : document;
  $(`[data-testid="${key[0]}"]`, scope || document)?.focus();
}

// params reads the query part of the hash (#/runs?status=FAILED).
export const hashParams = () => new URLSearchParams(location.hash.split('?')[1] || '');

// ---- API access: bearer token, asked for on 401 ----

export let token = sessionStorage.getItem(TOKEN_KEY) || '';
let tokenWait = null; // one prompt shared by every call that got 401
const tokenListeners = new Set();
export const onToken = fn => tokenListeners.add(fn);

export function setToken(v) {
  token = v;
  if (v) sessionStorage.setItem(TOKEN_KEY, v);
  else sessionStorage.removeItem(TOKEN_KEY);
  for (const fn of tokenListeners) fn();
}

function askToken(message) {
  tokenWait ??= new Promise(resolve => {
    const dlg = $('#token-dialog');
    const err = $('[data-testid=token-error]');
    err.hidden = !message;
    err.textContent = message || '';
    $('#token-input').value = '';
    $('#token-form').onsubmit = e => {
      e.preventDefault();
      const v = $('#token-input').value.trim();
      if (!v) return;
      setToken(v);
      dlg.close();
    };
    dlg.oncancel = e => e.preventDefault(); // nothing to show without a token
    // However it closed, the callers retry: without a token they get 401
    // again and the prompt comes back.
    dlg.onclose = () => { tokenWait = null; resolve(); };
    if (!dlg.open) dlg.showModal();
  });
  return tokenWait;
}

export class APIError extends Error {
  constructor(status, body, path) {
    super(body?.error?.message || (status ? `HTTP ${status}` : 'the API did not answer'));
    this.status = status;
    this.code = body?.error?.code;
    this.path = path;
  }
}

// api calls the JSON API. A network failure is an APIError with status 0;
// every error is also reported to the connection state, so the indicator
// follows what the pages see between two readiness polls.
export async function api(path, opts = {}) {
  for (;;) {
    const headers = { Accept: 'application/json' };
    // A JSON POST: without tokens the API refuses other POSTs (415), so a
    // foreign page cannot send it a "simple" cross-site request.
    if (opts.method && opts.method !== 'GET') headers['Content-Type'] = 'application/json';
    const sent = token;
    if (sent) headers.Authorization = `Bearer ${sent}`;
    let res;
    try {
      res = await fetch(path, { ...opts, headers });
    } catch {
      conn.sawFailure();
      throw new APIError(0, null, path);
    }
    const body = await res.json().catch(() => null);
    if (res.status === 401) {
      // A refusal of a token the user has replaced since the request
      // left says nothing of the new one: retry with it, never prompt
      // again over a token that may be good.
      if (sent === token) await askToken(sent ? `That token was refused: ${body?.error?.message || 'unauthenticated'}` : '');
      continue;
    }
    if (!res.ok) {
      if (res.status === 503) conn.sawFailure();
      throw new APIError(res.status, body, path);
    }
    return body;
  }
}

// errorText says what failed in words an operator can act on.
export function errorText(e) {
  if (e.status === 0) return 'the API did not answer (is runstream running, and is the network up?).';
  const m = /[.!?)]$/.test(e.message) ? e.message : `${e.message}.`;
  if (e.status === 403) return `${m} (needs an operator token)`;
  return e.code ? `${e.code}: ${m}` : m;
}

// ---- the connection state: one indicator for the whole console ----
//
// It combines the API's readiness (GET /readyz, polled every few seconds:
// per check "ok" or the error, for operators and when tokens are off) with
// the state of the page's live stream, and says the worst of them:
//   offline   the API itself does not answer
//   degraded  Redis is down: snapshots (the runs list, run pages, live
//             updates) are unavailable; what is shown may be out of date
//   store     Postgres is down: events, resync and rebuilds fail
//   notready  the API is not ready and does not say why (a tenant token)
//   reconnecting / live / idle   the page's stream, when all is well
export const READY_POLL_MS = 3000;
export const conn = {
  checks: null,      // {postgres: 'ok'|error, redis: ...} or null (not shown to this caller)
  ready: null,       // the last /readyz verdict; null before the first answer
  reachable: true,   // the last /readyz answered at all
  stream: 'none',    // the page's SSE stream: none | connecting | live | reconnecting
  streamState: null, // the stream's last `state` event when degraded: {state, reason, message}
  operator: null,    // readiness shows checks only to operators (or without tokens)
  since: Date.now(), // when the state last changed
  listeners: new Set(),
  timer: null,
  lastState: '',

  state() {
    if (!this.reachable) return 'offline';
    const c = this.checks;
    if (c && c.redis && c.redis !== 'ok') return 'degraded';
    // The stream says so itself (its hub PINGs Redis every second), also
    // to a tenant's token, which /readyz tells no details.
    if (this.streamState?.state === 'degraded' && this.stream === 'live') return 'degraded';
    if (c && c.postgres && c.postgres !== 'ok') return 'store';
    if (this.ready === false) return 'notready';
    if (this.stream === 'live') return 'live';
    if (this.stream === 'reconnecting' || this.stream === 'connecting') return 'reconnecting';
    return 'idle';
  },
  // healthy: the data a page shows can be trusted to be current.
  healthy() { return ['live', 'idle'].includes(this.state()); },
  text() {
    const c = this.checks || {};
    const both = c.redis && c.redis !== 'ok' && c.postgres && c.postgres !== 'ok';
    return {
      offline: '○ Offline: the API does not answer',
      degraded: both ? '▲ Degraded: snapshots unavailable (Redis) · Store unavailable (Postgres)'
        : this.streamState?.reason === 'snapshot_missing' && !(c.redis && c.redis !== 'ok') ? '▲ Degraded: snapshot missing from Redis (being rebuilt)'
          : '▲ Degraded: snapshots unavailable (Redis)',
      store: '▲ Store unavailable (Postgres)',
      notready: '▲ Degraded: the API is not ready',
      reconnecting: '○ Reconnecting…',
      live: '● Live',
      idle: '● Connected',
    }[this.state()];
  },
  detail() {
    const c = this.checks;
    const lines = c ? Object.entries(c).map(([k, v]) => `${k}: ${v}`) : [];
    if (this.stream === 'live') lines.push('live updates: connected');
    if (this.streamState?.message) lines.push(`stream: ${this.streamState.message}`);
    return lines.join('\n');
  },
  on(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); },
  setStream(s) { this.stream = s; if (s === 'none' || s === 'connecting') this.streamState = null; this.render(); },
  setStreamState(d) { this.streamState = d?.state === 'degraded' ? d : null; this.render(); },
  render() {
    const st = this.state();
    const el = $('[data-testid=live]');
    el.dataset.state = st;
    el.textContent = this.text();
    el.title = this.detail();
    if (st !== this.lastState) {
      const prev = this.lastState;
      this.lastState = st;
      this.since = Date.now();
      for (const fn of this.listeners) fn(st, prev);
    }
  },
  // sawFailure: a page's request failed; ask readiness now rather than
  // at the next poll.
  sawFailure() {
    clearTimeout(this.soon);
    this.soon = setTimeout(() => this.poll(), 100);
  },
  async poll() {
    // One poll at a time: a request made while one is out (sawFailure)
    // waits for it, so failures never multiply the polling loops.
    if (this.polling) { this.again = true; return; }
    this.polling = true;
    clearTimeout(this.timer);
    try {
      const headers = { Accept: 'application/json' };
      if (token) headers.Authorization = `Bearer ${token}`;
      const res = await fetch('/readyz', { headers, cache: 'no-store', signal: AbortSignal.timeout(5000) });
      const body = await res.json();
      this.reachable = true;
      this.ready = !!body.ready;
      this.checks = body.checks || null;
      this.operator = !!body.checks;
    } catch {
      this.reachable = false;
    }
    this.polling = false;
    this.render();
    document.body.classList.toggle('operator', !!this.operator);
    // A tenant's token lists its own tenant: no tenant field then.
    document.body.classList.toggle('tenant-token', !!token && !this.operator);
    clearTimeout(this.timer);
    if (this.again) { this.again = false; this.timer = setTimeout(() => this.poll(), 100); return; }
    this.timer = setTimeout(() => this.poll(), READY_POLL_MS);
  },
};

// ticketFor is the stream a ticket for path opens: a ticket is good for
// that one watch only ({"runId"} for a run's, the tenantId an operator
// picked for a tenant's).
function ticketFor(path) {
  const u = new URL(path, location.href);
  const m = /^\/v1\/runs\/([^/]+)\/watch$/.exec(u.pathname);
  if (m) return { runId: decodeURIComponent(m[1]) };
  const tenant = u.searchParams.get('tenantId');
  return tenant ? { tenantId: tenant } : {};
}

// watch opens an EventSource on path. EventSource cannot send headers, so
// with a token it first asks for a single-use stream ticket for that one
// stream (POST /v1/stream-tickets) and sends it as ?ticket=: the token
// itself never travels in a URL that proxies log. The browser retries dropped
// streams by itself; a refused one (401, 404, 5xx) closes for good, so we
// ask why with a plain GET through api() (which prompts for a token on
// 401) and reopen with backoff. onOpen runs on every (re)connection: a
// change made while no stream was open was never sent, so the caller
// re-reads then. An `end` event (a terminal run Redis no longer holds:
// its snapshot came from the store and will not change) closes the stream
// for good, with no reconnection, and goes to handlers.end when given.
// Returns a stop function.
export function watch(path, handlers, probe, onOpen) {
  let es, timer, stopped = false, delay = 1000;
  conn.setStream('connecting');
  const open = async () => {
    let url = path;
    if (token) {
      // A reconnection by the browser reuses the spent ticket and is
      // refused; onerror then comes back here for a new one.
      const t = await api('/v1/stream-tickets', { method: 'POST', body: JSON.stringify(ticketFor(path)) }).catch(() => null);
      if (stopped) return;
      if (t) url = `${path}${path.includes('?') ? '&' : '?'}ticket=${encodeURIComponent(t.ticket)}`;
    }
    es = new EventSource(url);
    es.onopen = () => { delay = 1000; conn.setStream('live'); onOpen?.(); };
    for (const [name, fn] of Object.entries(handlers)) {
      if (name !== 'end') es.addEventListener(name, e => fn(JSON.parse(e.data)));
    }
    es.addEventListener('end', e => {
      stopped = true;
      es.close();
      conn.setStream('none');
      handlers.end?.(JSON.parse(e.data));
    });
    // `state`: the stream's own word on Redis (degraded / live).
    es.addEventListener('state', e => conn.setStreamState(JSON.parse(e.data)));
    es.onerror = () => {
      if (stopped) return;
      conn.setStream('reconnecting');
      if (es.readyState !== EventSource.CLOSED) return;
      es.close();
      timer = setTimeout(async () => {
        await probe().catch(() => {});
        if (!stopped) open();
      }, delay);
      delay = Math.min(delay * 2, 30000);
    };
  };
  open();
  return () => { stopped = true; clearTimeout(timer); es?.close(); conn.setStream('none'); };
}

// confirmDialog asks before an action that changes state, with an
// optional reason for the audit log (GET /v1/operator-actions): resolves
// false when cancelled, else { reason } (reason may be '').
export function confirmDialog(title, text, action) {
  return new Promise(resolve => {
    const reason = h('input', { id: 'confirm-reason', name: 'reason', maxlength: 500, autocomplete: 'off', testid: 'confirm-reason',
      placeholder: 'why, for the audit log (optional)' });
    const dlg = h('dialog', { class: 'confirm', testid: 'confirm-dialog', 'aria-labelledby': 'confirm-title' },
      h('h2', { id: 'confirm-title' }, title), h('p', { testid: 'confirm-text' }, text),
      h('label', { for: 'confirm-reason' }, 'Reason'), reason,
      h('div', { class: 'actions' },
        h('button', { type: 'button', testid: 'confirm-cancel', onclick: () => dlg.close('cancel') }, 'Cancel'),
        h('button', { type: 'button', class: 'primary', testid: 'confirm-ok', onclick: () => dlg.close('ok') }, action)));
    dlg.addEventListener('close', () => { dlg.remove(); resolve(dlg.returnValue === 'ok' ? { reason: reason.value.trim() } : false); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

// forbidden renders the answer to a tenant token on an operator page.
export const forbidden = (what, e) => h('div', { class: 'notice error', role: 'alert', testid: 'needs-operator' },
  h('strong', {}, `${what} needs an operator token.`), ' ',
  `The API answered ${e.status} ${e.code || ''}: ${e.message}. Use "Forget token" and enter an operator token (a RUNSTREAM_AUTH_TOKENS entry token:*).`);
