// runstream console: the runs list (#/runs?status=&runIdPrefix=&engineRunRef=&plan=&from=&to=&sort=&order=&tenant=).
// Every filter lives in the hash, so a view deep-links and survives a reload.

import { h, patch, api, watch, conn, token, when, dur, num, badge, staleBadge, keepFocus, hashParams, errorText, STATUSES, clock, FAILED_ATTEMPTS_TITLE, confirmDialog } from './lib.js';

// Hash keys and the API parameters they become.
const FIELDS = [
  ['runIdPrefix', 'runIdPrefix', 'Run id starts with', 'e.g. 01J9'],
  ['engineRunRef', 'engineRunRef', 'Engine run ref', 'exact'],
  ['plan', 'planId', 'Plan', 'exact plan id'],
];
const SORTS = { updatedAt: 'Updated', startedAt: 'Started' };

// The datetime-local inputs show local time; the hash and the API carry RFC 3339.
const toLocalInput = iso => {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const d = new Date(t - new Date(t).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 16);
};
const fromLocalInput = v => (v ? new Date(v).toISOString() : '');

// The runs list's retention (--snapshot-ttl) in words: "24 h".
const span = sec => (sec % 3600 === 0 ? `${num(sec / 3600)} h` : sec % 60 === 0 ? `${num(sec / 60)} min` : `${num(sec)} s`);

export function runsPage(view) {
  const p0 = hashParams();
  const f = {
    status: p0.get('status') || '', runIdPrefix: p0.get('runIdPrefix') || '', engineRunRef: p0.get('engineRunRef') || '',
    plan: p0.get('plan') || '', from: p0.get('from') || '', to: p0.get('to') || '',
    sort: SORTS[p0.get('sort')] ? p0.get('sort') : 'updatedAt', order: p0.get('order') === 'asc' ? 'asc' : 'desc',
  };
  // Without credentials and for an operator the API lists ?tenantId= (else
  // its default tenant); a tenant's token lists its own tenant, and this
  // field is hidden (body.tenant-token).
  let tenant = p0.get('tenant') ?? sessionStorage.getItem('runstream.tenant') ?? '';
  let rows = [], last = null, cursor = '', error = null, loadedAt = null, refresh = null, stopWatch = null, loading = false;
  let epoch = 0; // bumped by restart(), so a load for the old filter is dropped

  const filters = h('div', { class: 'filters', role: 'group', 'aria-label': 'Filter runs by status' });
  const countNote = h('p', { class: 'muted small', testid: 'counts-note' });
  const banners = h('div');
  const body = h('div');
  const msg = h('div', { class: 'notice error', role: 'alert', testid: 'runs-error', hidden: true });
  const more = h('button', { type: 'button', testid: 'load-more', hidden: true, onclick: () => load(true) }, 'Load more');
  const pageNote = h('span', { class: 'muted', testid: 'page-note' });
  // A bulk action on every run the search matches, not only the pages
  // loaded: a rebuild of their snapshots from the store (operators),
  // followed on its own page.
  const bulkOut = h('span', { role: 'status', testid: 'bulk-result' });
  const bulk = h('button', { type: 'button', testid: 'bulk-rebuild', hidden: true, onclick: () => bulkRebuild() }, 'Rebuild all matching…');

  const tenantInput = h('input', { id: 'tenant', name: 'tenant', value: tenant, placeholder: 'server default', testid: 'tenant-input' });
  const tenantForm = h('form', { class: 'tenant', testid: 'tenant-form', onsubmit: e => {
    e.preventDefault();
    tenant = tenantInput.value.trim();
    restart();
  } }, h('label', { for: 'tenant' }, 'Tenant'), tenantInput, h('button', { type: 'submit', testid: 'tenant-submit' }, 'Show'));

  const inputs = {};
  const field = (key, label, el) => h('label', { class: 'field' }, h('span', {}, label), el);
  for (const [key, , label, ph] of FIELDS) {
    inputs[key] = h('input', { name: key, value: f[key], placeholder: ph, testid: `search-${key}`, autocomplete: 'off', spellcheck: 'false' });
  }
  inputs.from = h('input', { type: 'datetime-local', name: 'from', value: toLocalInput(f.from), testid: 'search-from' });
  inputs.to = h('input', { type: 'datetime-local', name: 'to', value: toLocalInput(f.to), testid: 'search-to' });
  inputs.sort = h('select', { name: 'sort', testid: 'sort' }, Object.entries(SORTS).map(([v, l]) => h('option', { value: v, selected: v === f.sort }, l)));
  inputs.order = h('select', { name: 'order', testid: 'order' },
    h('option', { value: 'desc', selected: f.order === 'desc' }, 'newest first'), h('option', { value: 'asc', selected: f.order === 'asc' }, 'oldest first'));
  const search = h('form', { class: 'search', role: 'search', testid: 'search-form', onsubmit: e => {
    e.preventDefault();
    for (const [key] of FIELDS) f[key] = inputs[key].value.trim();
    f.from = fromLocalInput(inputs.from.value);
    f.to = fromLocalInput(inputs.to.value);
    f.sort = inputs.sort.value;
    f.order = inputs.order.value;
    restart();
  } },
  FIELDS.map(([key, , label]) => field(key, label, inputs[key])),
  h('fieldset', { class: 'range' }, h('legend', {}, 'Sort by, and time range on'), inputs.sort,
    field('from', 'from', inputs.from), field('to', 'to (exclusive)', inputs.to)),
  field('order', 'Order', inputs.order),
  h('div', { class: 'search-actions' },
    h('button', { type: 'submit', class: 'primary', testid: 'search-submit' }, 'Search'),
    h('button', { type: 'button', testid: 'search-clear', onclick: () => {
      Object.assign(f, { runIdPrefix: '', engineRunRef: '', plan: '', from: '', to: '', sort: 'updatedAt', order: 'desc' });
      for (const k of ['runIdPrefix', 'engineRunRef', 'plan', 'from', 'to']) inputs[k].value = '';
      inputs.sort.value = 'updatedAt'; inputs.order.value = 'desc';
      restart();
    } }, 'Clear')));

  view.append(h('div', { class: 'run-title' }, h('h1', {}, 'Runs'), tenantForm), search, filters, countNote, banners, msg, body,
    h('div', { class: 'actions' }, more, pageNote), h('div', { class: 'actions wrap' }, bulk, bulkOut));
  document.title = 'Runs · runstream';

  const searching = () => !!(f.runIdPrefix || f.engineRunRef || f.plan || f.from || f.to);
  const query = extra => {
    const p = new URLSearchParams(extra);
    // A tenant's token always reads its own tenant (the API ignores
    // tenantId then); without tokens and for an operator, tenantId picks.
    if (tenant) p.set('tenantId', tenant);
    return p;
  };

  function restart() {
    const p = new URLSearchParams();
    for (const k of ['status', 'runIdPrefix', 'engineRunRef', 'plan', 'from', 'to']) if (f[k]) p.set(k, f[k]);
    if (f.sort !== 'updatedAt') p.set('sort', f.sort);
    if (f.order !== 'desc') p.set('order', f.order);
    if (tenant) p.set('tenant', tenant);
    sessionStorage.setItem('runstream.tenant', tenant);
    history.replaceState(null, '', `#/runs${p.size ? `?${p}` : ''}`);
    rows = []; cursor = ''; last = null; error = null; epoch++;
    stopWatch?.();
    stopWatch = liveUpdates();
    load(false);
  }

  // withSearch adds the list's filters, sort and order to p: the list's
  // requests and a bulk action on its search send the same ones.
  const withSearch = p => {
    if (f.status) p.set('status', f.status);
    for (const [key, param] of FIELDS) if (f[key]) p.set(param, f[key]);
    if (f.from) p.set('from', f.from);
    if (f.to) p.set('to', f.to);
    if (f.sort !== 'updatedAt') p.set('sort', f.sort);
    if (f.order !== 'desc') p.set('order', f.order);
    return p;
  };

  async function load(next) {
    const p = withSearch(query({ limit: 50 }));
    if (next) p.set('cursor', cursor);
    const mine = epoch;
    loading = true;
    try {
      const r = await api(`/v1/runs?${p}`);
      if (mine !== epoch) return;
      last = r;
      const got = r.runs || [];
      if (next) rows = rows.concat(got.filter(x => !rows.some(y => y.runId === x.runId)));
      else {
        // A live re-read of the first page keeps the pages loaded below it.
        const seen = new Set(got.map(x => x.runId));
        rows = got.concat(rows.slice(got.length).filter(x => !seen.has(x.runId)));
      }
      if (next || rows.length <= got.length) cursor = r.nextCursor || '';
      error = null;
      loadedAt = new Date();
    } catch (e) {
      if (mine !== epoch) return;
      error = e;
    } finally {
      loading = false;
    }
    render();
  }

  function render() {
    const counts = last?.counts;
    const exact = last && last.total != null;
    const total = last ? (exact ? last.total : Object.values(counts || {}).reduce((a, b) => a + b, 0)) : null;
    // No answer: counts are unknown ("—"), never 0.
    patch(filters, ...['', ...STATUSES].map(s => h('button', {
      type: 'button', 'aria-pressed': String(s === f.status), testid: `filter-${s || 'ALL'}`,
      onclick: () => { f.status = s; restart(); },
    }, s || 'All', ' ', h('span', { class: 'count', testid: `count-${s || 'ALL'}` }, !last ? '—' : s ? num(counts?.[s] ?? 0) : num(total)))));
    // What the list covers: the runs Redis keeps (retention, the API's
    // --snapshot-ttl). 0: every run.
    const kept = last?.retention?.terminalRunsSeconds || 0;
    // The counts are the tenant's, never the search's: said plainly when
    // a search narrows the list below them.
    const narrowed = searching();
    patch(countNote, !last ? '' : exact
      ? `Counts are exact, over all ${num(total)} runs of ${tenantLabel()} with a snapshot.`
      : `Counts cover only the ${num(total)} most recently updated runs this API counts (up to 1,000); older runs are not counted.`,
    last && narrowed ? h('strong', { testid: 'counts-not-search' }, ' They count every run, not this search: the search narrows the list below, not these numbers.') : '',
    kept ? h('span', { testid: 'retention-note' },
      ` The list and counts cover every open run and the runs that ended in the last ${span(kept)}; an older run is not listed but still opens by its id (#/runs/<runId>).`) : '');
    countNote.dataset.exact = String(!!exact);
    bulk.hidden = !last || !(tenant || rows[0]?.tenantId) || (token && !conn.operator);
    const n = matching();
    bulk.textContent = n == null ? 'Rebuild all matching…' : `Rebuild all ${num(n)} matching…`;
    filters.dataset.scope = narrowed ? 'tenant' : 'list';
    filters.title = narrowed ? 'Counts of every run of the tenant, not of the search' : '';

    // What the catalog cannot show: missing snapshots, a bounded scan.
    const notes = [];
    if (last && last.storeRuns != null && last.total != null && last.storeRuns > last.total) {
      // With a retention the store also counts the runs that ended before
      // it, so more runs in the store than listed is expected then.
      notes.push(h('div', { class: kept ? 'notice' : 'notice warn', role: 'status', testid: 'catalog-gap' },
        h('strong', {}, `${num(last.storeRuns)} runs in the store, ${num(last.total)} with snapshots: `),
        kept ? `runs that ended more than ${span(kept)} ago are in the store only. If more are missing, ` : '',
        'snapshots are being rebuilt or the projector is behind. Runs without a snapshot are not listed here yet; ',
        h('a', { href: '#/rebuilds' }, 'a rebuild'), ' refills them from the store.'));
    } else if (last && last.storeRuns === null) {
      notes.push(h('div', { class: 'notice warn', role: 'status', testid: 'store-unknown' },
        'The store (Postgres) did not answer: cannot check that every run has a snapshot.'));
    }
    if (last?.matched != null) notes.push(h('p', { class: 'muted', testid: 'matched' }, `${num(last.matched)} run${last.matched === 1 ? '' : 's'} match${last.matched === 1 ? 'es' : ''}.`));
    if (last?.scanLimited) {
      notes.push(h('div', { class: 'notice', role: 'status', testid: 'scan-limited' },
        `Searched ${last.scanned != null ? `${num(last.scanned)} runs` : 'a bounded part of the catalog'} and found ${num(rows.length)} so far: these filters combine more than one index, so each request scans a bounded number of runs. `,
        h('button', { type: 'button', testid: 'scan-continue', onclick: () => load(true), disabled: !cursor }, 'Continue searching')));
    }
    patch(banners, ...notes);

    // An error is never hidden behind an empty state.
    msg.hidden = !error;
    if (error) {
      patch(msg, h('strong', {}, 'Could not list runs: '), errorText(error),
        rows.length && loadedAt ? ` The list below is from ${clock(loadedAt)} and may be out of date.` : '');
    }
    more.hidden = !cursor || !!last?.scanLimited;
    pageNote.textContent = rows.length ? `${num(rows.length)} shown` : '';
    const shown = f.status ? rows.filter(r => r.status === f.status) : rows;
    body.classList.toggle('outdated', !!error || !conn.healthy());
    if (!shown.length) {
      if (error || !last || last.scanLimited) { patch(body); return; }
      const gap = last.storeRuns != null && last.total != null && last.storeRuns > last.total;
      patch(body, h('p', { class: 'muted', testid: 'runs-empty', 'data-gap': gap || null },
        gap ? 'No run shown has a snapshot yet: see above.'
          : searching() ? 'No runs match these filters.' : f.status ? `No ${f.status} runs.`
            : 'No runs yet. Append events with POST /v1/events, or start runstream dev --demo.'));
      return;
    }
    const cols = ['Run', 'Status', 'Plan', 'Engine run', 'Steps', 'Started', 'Updated', 'Duration (event time)'];
    const td = (label, attrs, ...kids) => h('td', { 'data-label': label, ...attrs }, ...kids);
    keepFocus(() => patch(body, h('div', { class: 'table-box' }, h('table', { class: 'runs cards', testid: 'runs-table' },
      h('thead', {}, h('tr', {}, cols.map(c => h('th', { scope: 'col', 'aria-sort': sortOf(c) }, c)))),
      h('tbody', {}, shown.map(r => h('tr', { testid: 'run-row', 'data-run-id': r.runId, 'data-key': r.runId },
        td('Run', {}, h('a', { href: `#/runs/${encodeURIComponent(r.runId)}`, class: 'mono', testid: 'run-link' }, r.runId)),
        td('Status', {}, badge(r.status, r.substatus), ' ', staleBadge(r.stale)),
        td('Plan', { testid: 'run-plan' }, `${r.planId ?? ''}${r.planVersion ? ` v${r.planVersion}` : ''}`),
        td('Engine run', { class: 'mono' }, r.engineRunRef || '—'),
        td('Steps', { class: 'num' }, r.steps ?? '—', r.failedSteps ? h('span', { class: r.status === 'FAILED' ? 'failed-count' : 'muted', testid: 'failed-attempts', title: FAILED_ATTEMPTS_TITLE },
          ` (${num(r.failedSteps)} failed attempt${r.failedSteps === 1 ? '' : 's'})`) : null),
        td('Started', { testid: 'run-started', 'data-at': r.startedAt || '' }, when(r.startedAt)),
        td('Updated', { testid: 'run-updated', 'data-at': r.updatedAt || '' }, when(r.updatedAt)),
        td('Duration', { class: 'num', title: 'completedAt − startedAt by event time (payload sourceOccurredAt, else emittedAt)' }, dur(r.totalDurationMs)))))))));
  }
  const sortOf = c => (c === SORTS[f.sort] ? (f.order === 'asc' ? 'ascending' : 'descending') : null);
  // matching says how many runs the search matches, when the API knows.
  const matching = () => last?.matched ?? (searching() || f.status ? null : last?.total ?? null);
  async function bulkRebuild() {
    const t = tenant || rows[0]?.tenantId;
    if (!t) return;
    const p = withSearch(new URLSearchParams({ tenantId: t }));
    const n = matching();
    const ok = await confirmDialog('Rebuild every matching run?',
      `Rebuild the snapshots of ${n == null ? 'every run' : `all ${num(n)} run${n === 1 ? '' : 's'}`} of tenant ${t} this search matches${f.status ? ` (status ${f.status})` : ''}, `
      + 'not only the ones listed, from the store? It runs in the background, page by page.', 'Rebuild');
    if (!ok) return;
    try {
      const r = await api('/v1/rebuilds', { method: 'POST', body: JSON.stringify({ search: p.toString(), ...(ok.reason ? { reason: ok.reason } : {}) }) });
      location.hash = `#/rebuilds/${encodeURIComponent(r.rebuild.id)}`;
    } catch (e) {
      bulkOut.className = 'error';
      bulkOut.textContent = `Could not start the rebuild: ${errorText(e)}`;
    }
  }

  const tenantLabel = () => token && !conn.operator ? 'this token\'s tenant' : tenant ? `tenant ${tenant}` : 'the default tenant';

  // Live: patch the row now, re-read the first page (new runs, counts) soon.
  const liveUpdates = () => watch(`/v1/runs/watch?${query()}`, {
    update: u => {
      const r = rows.find(x => x.runId === u.runId);
      if (r) Object.assign(r, { status: u.status, lastEventSeq: u.lastEventSeq, updatedAt: new Date().toISOString() });
      render();
      refresh ??= setTimeout(() => { refresh = null; if (!loading) load(false); }, 300);
    },
    reset: () => load(false), // the stream dropped updates: re-read
  }, () => api(`/v1/runs?${query({ limit: 1 })}`), () => load(false));
  // Readiness changes: mark the list, and re-read when the API recovers.
  const offConn = conn.on((st, prev) => {
    render();
    if (conn.healthy() && prev && !['live', 'idle', 'reconnecting'].includes(prev)) load(false);
  });
  restart();
  return () => { stopWatch?.(); clearTimeout(refresh); offConn(); };
}
