// runstream console: plain ES module, no build step, no dependencies.
// Routes: #/runs[?status=S] (runs list) and #/runs/<runId> (run page).
// Data: the /v1 read API; live updates through Server-Sent Events.

const $ = (sel, root = document) => root.querySelector(sel);
const TOKEN_KEY = 'runstream.token';
const STATUSES = ['PENDING', 'APPROVED', 'RUNNING', 'PAUSED', 'COMPLETED', 'FAILED', 'CANCELLED'];
const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);
const EVENTS_PAGE = 50;

// h builds an element: h('a', {href, testid, onclick}, ...children).
// Children are text or nodes; text is never parsed as HTML.
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
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

// ---- formatting ----

const UNITS = [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]];
function rel(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '—';
  const s = Math.round((Date.now() - t) / 1000);
  if (Math.abs(s) < 5) return 'just now';
  const [u, n] = UNITS.find(([, n]) => Math.abs(s) >= n);
  const v = Math.floor(Math.abs(s) / n);
  return s > 0 ? `${v}${u} ago` : `in ${v}${u}`;
}
const when = iso => iso
  ? h('time', { datetime: iso, title: new Date(iso).toLocaleString() }, rel(iso))
  : h('span', { class: 'muted' }, '—');
function dur(ms) {
  if (ms == null) return '—';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${Math.round(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${Math.round((s % 3600) / 60)}m`;
}
function size(n) {
  if (n == null) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${u[i]}`;
}
const badge = (status, sub) => h('span', { class: `badge s-${(status || 'unknown').toLowerCase()}`, testid: 'status' },
  status || 'UNKNOWN', sub ? h('span', { class: 'sub', testid: 'substatus' }, ` · ${sub}`) : null);
const staleBadge = stale => h('span', { class: 'badge stale', testid: 'stale-badge', hidden: !stale,
  title: 'The projector saw a gap and has not resynced yet: this view may be behind the store.' }, 'STALE');

// Relative times and running bars age in place.
let tick = null;
setInterval(() => {
  for (const t of document.querySelectorAll('time[datetime]')) t.textContent = rel(t.getAttribute('datetime'));
  tick?.();
}, 10000);

// ---- API access: bearer token, asked for on 401 ----

let token = sessionStorage.getItem(TOKEN_KEY) || '';
let tokenWait = null; // one prompt shared by every call that got 401

function showTokenState() {
  $('[data-testid=forget-token]').hidden = !token;
  const tenantForm = $('form.tenant');
  if (tenantForm) tenantForm.hidden = !!token;
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
      token = v;
      sessionStorage.setItem(TOKEN_KEY, v);
      showTokenState();
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

class APIError extends Error {
  constructor(status, body) {
    super(body?.error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

async function api(path, opts = {}) {
  for (;;) {
    const headers = { Accept: 'application/json' };
    // A JSON POST: without tokens the API refuses other POSTs (415), so a
    // foreign page cannot send it a "simple" cross-site request.
    if (opts.method && opts.method !== 'GET') headers['Content-Type'] = 'application/json';
    if (token) headers.Authorization = `Bearer ${token}`;
    const res = await fetch(path, { ...opts, headers });
    const body = await res.json().catch(() => null);
    if (res.status === 401) {
      await askToken(token ? `That token was refused: ${body?.error?.message || 'unauthenticated'}` : '');
      continue;
    }
    if (!res.ok) throw new APIError(res.status, body);
    return body;
  }
}

// watch opens an EventSource on path. EventSource cannot send headers, so
// with a token it first asks for a single-use stream ticket
// (POST /v1/stream-tickets) and sends that as ?ticket=: the token itself
// never travels in a URL that proxies log. The browser retries dropped streams by
// itself; a refused one (401, 404, 5xx) closes for good, so we ask why with
// a plain GET through api() (which prompts for a token on 401) and reopen
// with backoff. onOpen runs on every (re)connection: a change made while no
// stream was open was never sent, so the caller re-reads then. Returns a
// stop function.
function watch(path, handlers, probe, onOpen) {
  let es, timer, stopped = false, delay = 1000;
  const open = async () => {
    let url = path;
    if (token) {
      // A reconnection by the browser reuses the spent ticket and is
      // refused; onerror then comes back here for a new one.
      const t = await api('/v1/stream-tickets', { method: 'POST' }).catch(() => null);
      if (stopped) return;
      if (t) url = `${path}${path.includes('?') ? '&' : '?'}ticket=${encodeURIComponent(t.ticket)}`;
    }
    es = new EventSource(url);
    es.onopen = () => { delay = 1000; setLive('live'); onOpen?.(); };
    for (const [name, fn] of Object.entries(handlers)) {
      es.addEventListener(name, e => fn(JSON.parse(e.data)));
    }
    es.onerror = () => {
      if (es.readyState !== EventSource.CLOSED) { setLive('reconnecting'); return; }
      es.close();
      setLive('offline');
      timer = setTimeout(async () => {
        await probe().catch(() => {});
        if (!stopped) open();
      }, delay);
      delay = Math.min(delay * 2, 30000);
    };
  };
  open();
  return () => { stopped = true; clearTimeout(timer); es?.close(); };
}

function setLive(state) {
  const el = $('[data-testid=live]');
  el.dataset.state = state;
  el.textContent = { live: '● Live', reconnecting: '○ Reconnecting…', offline: '○ Offline, retrying' }[state];
}

// keepFocus re-renders with fn and gives focus back to the same control,
// so a live update does not pull the keyboard out of a table.
function keepFocus(fn) {
  const a = document.activeElement;
  const key = a?.dataset?.testid && [a.dataset.testid, a.closest('[data-key]')?.dataset.key];
  fn();
  if (!key) return;
  const scope = key[1] ? $(`[data-key="${CSS.escape(key[1])}"]`) : document;
  $(`[data-testid="${key[0]}"]`, scope || document)?.focus();
}

// ---- runs list ----

function runsPage(view) {
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  let status = params.get('status') || '';
  // Without credentials the API lists ?tenantId= (else its default tenant);
  // with a token the token's tenant is listed and this field is hidden.
  let tenant = params.get('tenant') ?? sessionStorage.getItem('runstream.tenant') ?? '';
  let rows = [], counts = {}, cursor = '', pages = 0, refresh = null, stopWatch = null;
  let epoch = 0; // bumped by restart(), so a load for the old filter is dropped
  const filters = h('div', { class: 'filters', role: 'group', 'aria-label': 'Filter runs by status' });
  const body = h('div');
  const msg = h('p', { class: 'error', role: 'alert', testid: 'runs-error', hidden: true });
  const more = h('button', { type: 'button', testid: 'load-more', hidden: true, onclick: () => load(true) }, 'Load more');
  const tenantInput = h('input', { id: 'tenant', name: 'tenant', value: tenant, placeholder: 'server default', testid: 'tenant-input' });
  const tenantForm = h('form', { class: 'tenant', hidden: !!token, onsubmit: e => {
    e.preventDefault();
    tenant = tenantInput.value.trim();
    restart();
  } }, h('label', { for: 'tenant' }, 'Tenant'), tenantInput, h('button', { type: 'submit', testid: 'tenant-submit' }, 'Show'));
  view.append(h('div', { class: 'run-title' }, h('h1', {}, 'Runs'), tenantForm), filters, msg, body, h('div', { class: 'actions' }, more));
  document.title = 'Runs · runstream';
  const query = extra => {
    const p = new URLSearchParams(extra);
    if (tenant && !token) p.set('tenantId', tenant);
    return p;
  };
  function restart() {
    const p = new URLSearchParams();
    if (status) p.set('status', status);
    if (tenant) p.set('tenant', tenant);
    sessionStorage.setItem('runstream.tenant', tenant);
    history.replaceState(null, '', `#/runs${p.size ? `?${p}` : ''}`);
    rows = []; pages = 0; cursor = ''; epoch++;
    stopWatch?.();
    stopWatch = liveUpdates();
    load(false);
  }

  async function load(next) {
    const p = query({ limit: 50 });
    if (status) p.set('status', status);
    if (next) p.set('cursor', cursor);
    const mine = epoch;
    try {
      const r = await api(`/v1/runs?${p}`);
      if (mine !== epoch) return;
      counts = r.counts || {};
      const got = r.runs || [];
      const seen = new Set(got.map(x => x.runId));
      if (next) { rows = rows.concat(got.filter(x => !rows.some(y => y.runId === x.runId))); pages++; }
      else rows = got.concat(rows.slice(got.length).filter(x => !seen.has(x.runId)));
      if (next || pages <= 1) cursor = r.nextCursor || '';
      if (!next && !pages) pages = 1;
      msg.hidden = true;
    } catch (e) {
      msg.textContent = `Could not list runs: ${e.message}`;
      msg.hidden = false;
    }
    render();
  }

  function render() {
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    filters.replaceChildren(...['', ...STATUSES].map(s => h('button', {
      type: 'button', 'aria-pressed': String(s === status), testid: `filter-${s || 'ALL'}`,
      onclick: () => { status = s; restart(); },
    }, s || 'All', ' ', h('span', { class: 'count', testid: `count-${s || 'ALL'}` }, s ? counts[s] ?? 0 : total))));
    const shown = status ? rows.filter(r => r.status === status) : rows;
    more.hidden = !cursor;
    if (!shown.length) {
      body.replaceChildren(h('p', { class: 'muted', testid: 'runs-empty' },
        status ? `No ${status} runs.` : 'No runs yet. Append events with POST /v1/events, or start runstream dev --demo.'));
      return;
    }
    keepFocus(() => body.replaceChildren(h('table', { class: 'runs', testid: 'runs-table' },
      h('thead', {}, h('tr', {}, ['Run', 'Status', 'Plan', 'Steps', 'Started', 'Updated', 'Duration'].map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, shown.map(r => h('tr', { testid: 'run-row', 'data-run-id': r.runId, 'data-key': r.runId },
        h('td', {}, h('a', { href: `#/runs/${encodeURIComponent(r.runId)}`, class: 'mono', testid: 'run-link' }, r.runId)),
        h('td', {}, badge(r.status, r.substatus), ' ', staleBadge(r.stale)),
        h('td', {}, `${r.planId ?? ''}${r.planVersion ? ` v${r.planVersion}` : ''}`),
        h('td', { class: 'num' }, r.steps ?? '—', r.failedSteps ? h('span', { class: 'failed-count' }, ` (${r.failedSteps} failed)`) : null),
        h('td', {}, when(r.startedAt)),
        h('td', {}, when(r.updatedAt)),
        h('td', { class: 'num' }, dur(r.totalDurationMs))))))));
  }

  // Live: patch the row now, re-read the first page (new runs, counts) soon.
  const liveUpdates = () => watch(`/v1/runs/watch?${query()}`, {
    update: u => {
      const r = rows.find(x => x.runId === u.runId);
      if (r) Object.assign(r, { status: u.status, lastEventSeq: u.lastEventSeq, updatedAt: new Date().toISOString() });
      render();
      refresh ??= setTimeout(() => { refresh = null; load(false); }, 300);
    },
    reset: () => load(false), // the stream dropped updates: re-read
  }, () => api(`/v1/runs?${query({ limit: 1 })}`), () => load(false));
  restart();
  return () => { stopWatch?.(); clearTimeout(refresh); };
}

// ---- run page ----

function attemptsOf(step) {
  const { attempts, stepId, ...current } = step;
  return [...(attempts || []), current];
}

function runPage(view, id) {
  const enc = encodeURIComponent(id);
  let snap = null, events = [], oldest = 0, newest = 0, evChain = Promise.resolve();
  const openSteps = new Set(), openPayloads = new Set();
  const head = h('div', { class: 'run-meta' });
  const resyncOut = h('span', { role: 'status', testid: 'resync-result', class: 'muted' });
  const resyncBtn = h('button', { type: 'button', testid: 'resync', onclick: resync,
    title: 'Rebuild this run\'s snapshot from the store (FULL resync)' }, 'Resync');
  const steps = h('div'), timeline = h('div'), arts = h('div'), evBox = h('div');
  const older = h('button', { type: 'button', testid: 'events-older', onclick: loadOlder }, 'Older events');
  view.append(
    h('p', {}, h('a', { href: '#/runs' }, '← All runs')),
    h('div', { class: 'run-title' }, h('h1', {}, 'Run ', h('span', { class: 'mono', testid: 'run-id' }, id)),
      h('div', { class: 'actions' }, resyncBtn, resyncOut)),
    head,
    h('section', { 'aria-labelledby': 'h-steps' }, h('h2', { id: 'h-steps' }, 'Steps'), steps),
    h('section', { 'aria-labelledby': 'h-tl' }, h('h2', { id: 'h-tl' }, 'Timeline'), timeline),
    h('section', { 'aria-labelledby': 'h-art' }, h('h2', { id: 'h-art' }, 'Artifacts'), arts),
    h('section', { 'aria-labelledby': 'h-ev' }, h('h2', { id: 'h-ev' }, 'Events'),
      h('p', { class: 'muted' }, 'From the store (the source of truth), newest first.'), evBox, h('div', { class: 'actions' }, older)));

  function apply(s) {
    if (snap && s.lastEventSeq < snap.lastEventSeq) return; // an older copy
    snap = s;
    renderAll();
    evChain = evChain.then(loadNewer);
  }

  function renderAll() {
    document.title = `${snap.status} · run ${id} · runstream`;
    keepFocus(() => { renderHead(); renderSteps(); renderTimeline(); renderArtifacts(); });
  }

  function renderHead() {
    const s = snap;
    const item = (k, v, testid) => [h('dt', {}, k), h('dd', { testid }, v)];
    head.replaceChildren(
      h('p', { class: 'status-line' }, badge(s.status, s.substatus), ' ', staleBadge(s.stale),
        s.stale ? h('span', { class: 'muted' }, ' The projector saw a gap: this view may be behind the store until it resyncs (or press Resync).') : ''),
      s.error ? h('div', { class: 'run-error', role: 'alert', testid: 'run-error' },
        h('strong', {}, s.error.code), ': ', s.error.message) : '',
      h('dl', {},
        item('Tenant', s.tenantId), item('Project / env', `${s.projectId} / ${s.environmentId}`),
        item('Plan', `${s.planId} v${s.planVersion}`), s.engineRunRef ? item('Engine run', s.engineRunRef) : null,
        item('Started', when(s.startedAt)), item('Completed', when(s.completedAt)),
        item('Duration', dur(s.totalDurationMs), 'run-duration'),
        item('Failed steps', s.failedSteps ?? 0), item('Last event seq', s.lastEventSeq, 'last-seq'),
        item('Updated', when(s.updatedAt))));
  }

  function renderSteps() {
    const list = snap.steps || [];
    if (!list.length) { steps.replaceChildren(h('p', { class: 'muted' }, 'No steps yet.')); return; }
    const cols = ['Step', 'Status', 'Attempt', 'Started', 'Duration', 'Error', 'Artifacts'];
    steps.replaceChildren(h('table', { class: 'steps', testid: 'steps-table' },
      h('thead', {}, h('tr', {}, cols.map(c => h('th', { scope: 'col' }, c)))),
      list.map(step => {
        const all = attemptsOf(step);
        const lastErr = [...all].reverse().find(a => a.error);
        const isOpen = openSteps.has(step.stepId);
        const detailId = `step-detail-${step.stepId}`;
        const toggle = () => { isOpen ? openSteps.delete(step.stepId) : openSteps.add(step.stepId); keepFocus(renderSteps); };
        const btn = (testid, ...label) => h('button', { type: 'button', class: 'link', testid,
          'aria-expanded': String(isOpen), 'aria-controls': detailId, onclick: toggle }, ...label);
        return h('tbody', { 'data-step-id': step.stepId, 'data-key': `step:${step.stepId}` },
          h('tr', { testid: 'step-row', class: isOpen ? 'open' : '' },
            h('td', {}, btn('step-toggle', h('span', { class: 'caret', 'aria-hidden': 'true' }, isOpen ? '▾ ' : '▸ '), step.stepId)),
            h('td', {}, badge(step.status)),
            h('td', { testid: 'step-attempt', title: `engine attempt ${step.engineAttemptId ?? '—'}` },
              `#${step.logicalAttemptId}`, all.length > 1 ? h('span', { class: 'muted' }, ` of ${all.length}`) : null),
            h('td', {}, when(step.startedAt)),
            h('td', { class: 'num' }, step.durationMs != null ? dur(step.durationMs) : step.status === 'RUNNING' ? 'running' : '—'),
            h('td', {}, lastErr ? btn('error-toggle', h('span', { class: lastErr === all.at(-1) ? 'err-code' : 'err-code earlier' },
              lastErr.error.code), lastErr === all.at(-1) ? '' : h('span', { class: 'muted' }, ` (attempt #${lastErr.logicalAttemptId})`))
              : h('span', { class: 'muted' }, '—')),
            h('td', { class: 'num' }, (step.artifacts || []).length)),
          isOpen ? h('tr', { class: 'detail', id: detailId },
            h('td', { colspan: cols.length }, attemptsTable(step.stepId, all))) : null);
      })));
  }

  function attemptsTable(stepId, all) {
    return h('table', { class: 'attempts', testid: 'attempts-table', 'aria-label': `Attempts of ${stepId}` },
      h('thead', {}, h('tr', {}, ['Attempt', 'Status', 'Started', 'Completed', 'Duration', 'Error', 'Artifacts'].map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, [...all].reverse().map(a => h('tr', { testid: 'attempt-row', 'data-attempt': a.logicalAttemptId },
        h('td', {}, `#${a.logicalAttemptId}`, h('span', { class: 'muted' }, ` (engine ${a.engineAttemptId ?? '—'})`)),
        h('td', {}, badge(a.status)),
        h('td', {}, when(a.startedAt)), h('td', {}, when(a.completedAt)), h('td', { class: 'num' }, dur(a.durationMs)),
        h('td', {}, a.error ? h('div', { class: 'attempt-error', testid: 'attempt-error' },
          h('strong', { class: 'err-code' }, a.error.code), h('p', { testid: 'attempt-error-message' }, a.error.message),
          h('small', { class: 'muted' }, [a.error.category, a.error.source, a.error.retryable ? 'retryable' : 'not retryable'].filter(Boolean).join(' · ')))
          : a.skip ? `${a.skip.reasonCode || ''} ${a.skip.reason || ''}` : h('span', { class: 'muted' }, '—')),
        h('td', {}, artifactList(a.artifacts))))));
  }

  const artifactList = list => list?.length
    ? h('ul', { class: 'artifacts' }, list.map(x => h('li', {}, h('code', {}, x.uri), ' ', h('span', { class: 'muted' }, `${x.kind} · ${size(x.sizeBytes)}`))))
    : h('span', { class: 'muted' }, '—');

  function renderTimeline() {
    const bars = (snap.steps || []).flatMap(s => attemptsOf(s).filter(a => a.startedAt).map(a => ({ step: s.stepId, a })));
    if (!bars.length) { timeline.replaceChildren(h('p', { class: 'muted' }, 'No step has started yet.')); return; }
    const start = a => Date.parse(a.startedAt);
    const end = a => a.completedAt ? Date.parse(a.completedAt)
      : a.durationMs != null ? start(a) + a.durationMs : TERMINAL.has(snap.status) ? start(a) : Date.now();
    const t0 = Math.min(...bars.map(b => start(b.a)), Date.parse(snap.startedAt) || Infinity);
    const t1 = Math.max(...bars.map(b => end(b.a)), Date.parse(snap.completedAt) || 0, t0 + 1);
    const pct = t => `${((t - t0) / (t1 - t0)) * 100}%`;
    timeline.replaceChildren(h('div', { class: 'timeline', testid: 'timeline', role: 'list' },
      bars.map(({ step, a }) => h('div', { class: 'tl-row', role: 'listitem', testid: 'timeline-bar' },
        h('span', { class: 'tl-label' }, `${step} #${a.logicalAttemptId}`),
        h('div', { class: 'tl-track' }, h('div', {
          class: `tl-bar s-${a.status.toLowerCase()}`, style: { left: pct(start(a)), width: `max(3px, ${pct(end(a) + t0 - start(a))})` },
          title: `${step} attempt #${a.logicalAttemptId}: ${a.status}, ${dur(end(a) - start(a))}`,
        })),
        h('span', { class: 'tl-dur num' }, dur(end(a) - start(a))))),
      h('div', { class: 'tl-axis muted' }, h('span', {}, new Date(t0).toLocaleTimeString()), h('span', {}, `${dur(t1 - t0)} total`))));
  }

  function renderArtifacts() {
    const list = snap.artifacts || [];
    arts.replaceChildren(list.length ? h('table', { testid: 'artifacts-table' },
      h('thead', {}, h('tr', {}, ['URI', 'Kind', 'Size', 'SHA-256'].map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, list.map(x => h('tr', {}, h('td', {}, h('code', {}, x.uri)), h('td', {}, x.kind),
        h('td', { class: 'num' }, size(x.sizeBytes)), h('td', { class: 'mono', title: x.sha256 || '' }, x.sha256 ? x.sha256.slice(0, 12) : '—')))))
      : h('p', { class: 'muted' }, 'No artifacts.'));
  }

  // Events: the newest page first, then on every change the events after
  // the newest one held; "Older events" pages back by runSeq.
  async function loadNewer() {
    if (!newest && snap) newest = oldest = Math.max(0, snap.lastEventSeq - EVENTS_PAGE);
    const r = await api(`/v1/runs/${enc}/events?afterSeq=${newest}&limit=1000`).catch(showEventsError);
    const got = r?.events || [];
    if (!got.length) { renderEvents(); return; }
    if (!events.length) oldest = got[0].runSeq;
    events = got.reverse().concat(events);
    newest = events[0].runSeq;
    renderEvents();
  }

  async function loadOlder() {
    const after = Math.max(0, oldest - 1 - EVENTS_PAGE);
    const r = await api(`/v1/runs/${enc}/events?afterSeq=${after}&limit=${oldest - 1 - after}`).catch(showEventsError);
    if (!r) return;
    events = events.concat(r.events.reverse());
    oldest = after + 1;
    renderEvents();
  }

  function showEventsError(e) { evBox.replaceChildren(h('p', { class: 'error', role: 'alert' }, `Could not read events: ${e.message}`)); }

  function renderEvents() {
    older.hidden = oldest <= 1;
    if (!events.length) { evBox.replaceChildren(h('p', { class: 'muted' }, 'No events.')); return; }
    evBox.replaceChildren(h('table', { class: 'events', testid: 'events-table' },
      h('thead', {}, h('tr', {}, ['Seq', 'Type', 'Step', 'Attempt', 'Emitted', 'Persisted', 'Payload'].map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, events.map(e => h('tr', { testid: 'event-row', 'data-seq': e.runSeq },
        h('td', { class: 'num' }, e.runSeq), h('td', { testid: 'event-type' }, e.eventType), h('td', {}, e.stepId || '—'),
        h('td', { class: 'num' }, `${e.logicalAttemptId}/${e.engineAttemptId}`),
        h('td', {}, when(e.emittedAt)), h('td', {}, when(e.persistedAt)),
        h('td', {}, e.payload ? h('details', { open: openPayloads.has(e.runSeq),
          ontoggle: ev => ev.target.open ? openPayloads.add(e.runSeq) : openPayloads.delete(e.runSeq) },
        h('summary', {}, 'payload'), h('pre', {}, JSON.stringify(e.payload, null, 2))) : h('span', { class: 'muted' }, '—')))))));
  }

  async function resync() {
    resyncBtn.disabled = true;
    resyncOut.className = 'muted';
    resyncOut.textContent = 'Requesting a FULL resync…';
    try {
      const r = await api(`/v1/runs/${enc}/resync`, { method: 'POST' });
      resyncOut.textContent = `Resynced from the store at event ${r.lastEventSeq}.`;
    } catch (e) {
      resyncOut.className = 'error';
      resyncOut.textContent = `Resync failed: ${e.message}`;
    } finally {
      resyncBtn.disabled = false;
    }
  }

  const fetchSnapshot = () => api(`/v1/runs/${enc}/snapshot`).then(apply, e => {
    if (snap) return;
    head.replaceChildren(h('p', { class: e.status === 404 ? 'muted' : 'error', role: 'alert', testid: 'run-missing' },
      e.status === 404 ? 'No snapshot of this run yet: it is unknown, or the projector has not reached it. This page updates when it does.'
        : `Could not read the run: ${e.message}`));
    evChain = evChain.then(loadNewer);
  });
  tick = () => { if (snap && !TERMINAL.has(snap.status)) renderTimeline(); };
  fetchSnapshot();
  const stop = watch(`/v1/runs/${enc}/watch`, {
    snapshot: apply,
    stale: () => { if (snap) { snap.stale = true; renderAll(); } },
    recovered: () => { if (snap) { snap.stale = false; renderAll(); } },
  }, fetchSnapshot);
  return () => { stop(); tick = null; };
}

// ---- router ----

let leave = null;
function route() {
  leave?.();
  const view = $('#view');
  view.replaceChildren();
  const m = location.hash.match(/^#\/runs\/([^?]+)/);
  leave = m ? runPage(view, decodeURIComponent(m[1])) : runsPage(view);
}

$('[data-testid=forget-token]').addEventListener('click', () => {
  token = '';
  sessionStorage.removeItem(TOKEN_KEY);
  showTokenState();
  route();
});
showTokenState();
window.addEventListener('hashchange', route);
route();
