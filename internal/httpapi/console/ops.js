// runstream console: the operator's pages. Consumer lag (#/lag, #/lag/<group>;
// a group's own page resets an idle group's offsets or deletes it), dead letters (#/dead-letters, #/dead-letters/<id>) and rebuilds
// (#/rebuilds, #/rebuilds/<id>). A tenant's token gets 403 from their
// routes: the page says an operator token is needed.

import { h, patch, api, num, when, clock, dur, errorText, forbidden, confirmDialog, hashParams } from './lib.js';

export const LAG_REFRESH_MS = 3000;
// FRESHNESS_ALERT_S is the threshold of the alert SNAPSHOT_FRESHNESS_LOW:
// a group's freshness past it is coloured.
export const FRESHNESS_ALERT_S = 10;
const REBUILD_POLL_MS = 1000;

const secs = s => (s == null ? '—' : s < 1 ? `${Math.round(s * 1000)} ms` : dur(s * 1000));
const td = (label, attrs, ...kids) => h('td', { 'data-label': label, ...attrs }, ...kids);

// refreshLine says when a polled page last refreshed, and a failed refresh as such.
function refreshLine(el, okAt, err) {
  el.replaceChildren(
    okAt ? h('span', { testid: 'refreshed-at', 'data-at': okAt.toISOString() }, `Refreshed at ${clock(okAt)}, every ${LAG_REFRESH_MS / 1000} s.`) : 'Not refreshed yet.',
    err ? h('span', { class: 'error', role: 'alert', testid: 'refresh-error' },
      ` Refresh failed at ${clock(new Date())}: ${errorText(err)}${okAt ? ' Showing the last good answer.' : ''}`) : '');
  el.classList.toggle('failing', !!err);
}

// ---- consumer lag ----

export function lagPage(view, group) {
  const status = h('p', { class: 'muted small', testid: 'lag-refresh', role: 'status' });
  const body = h('div', { testid: 'lag-body' });
  view.append(h('p', {}, group ? h('a', { href: '#/lag' }, '← All consumer groups') : ''),
    h('h1', {}, group ? ['Consumer lag: ', h('span', { class: 'mono' }, group)] : 'Consumer lag'),
    h('p', { class: 'muted small' }, 'Every consumer group of the topic: per partition the committed offset, the end offset, '
      + 'lag in records and in seconds (how old the oldest unread record is), and which member owns it. '
      + 'Freshness is how long the oldest committed event the group has not applied has waited, counting events still in '
      + `the store's outbox (not yet on the topic); past ${FRESHNESS_ALERT_S} s it is coloured (alert SNAPSHOT_FRESHNESS_LOW).`),
    status, body);
  // A group's own page can change it; the box stays across refreshes.
  const admin = group ? groupAdmin(group) : null;
  if (admin) view.append(admin.el);
  document.title = `${group ? `${group} · ` : ''}Lag · runstream`;
  let okAt = null, timer = null, gone = false, denied = false, last = null;
  // The overview: groups sorted by how far behind they are (the ones that
  // need a look first) or by name; healthy groups (no lag, fresh) folded
  // to their head line. An operator's opening or folding of a group
  // survives the refreshes.
  const sortBy = h('select', { testid: 'lag-sort', 'aria-label': 'Sort groups by' },
    h('option', { value: 'lag' }, 'most behind first'), h('option', { value: 'name' }, 'name'));
  sortBy.addEventListener('change', () => last && render(last));
  const opened = new Map();
  if (!group) view.insertBefore(h('p', { class: 'small' }, h('label', {}, 'Sort groups by ', sortBy)), body);

  async function refresh() {
    try {
      const r = group ? { groups: [await api(`/v1/lag?group=${encodeURIComponent(group)}`)] } : await api('/v1/lag/groups');
      last = r;
      if (gone) return;
      okAt = new Date();
      refreshLine(status, okAt, null);
      render(r);
    } catch (e) {
      if (gone) return;
      if (e.status === 403) { denied = true; patch(status); patch(body, forbidden('The lag page', e)); return; }
      if (e.status === 404 && group) {
        // An unknown group: said once, not asked again every few seconds.
        denied = true;
        patch(status);
        patch(body, h('div', { class: 'not-found', testid: 'not-found' }, h('p', {}, `No consumer group ${group}: ${errorText(e)}`),
          h('a', { href: '#/lag' }, 'All consumer groups')));
        return;
      }
      refreshLine(status, okAt, e);
      if (!okAt) patch(body, h('div', { class: 'notice error', role: 'alert', testid: 'lag-error' }, 'Could not read consumer lag: ', errorText(e)));
      else body.classList.add('outdated');
    } finally {
      if (!gone && !denied) timer = setTimeout(refresh, LAG_REFRESH_MS);
    }
  }

  function render(r) {
    body.classList.remove('outdated');
    const groups = r.groups || [];
    const notes = [];
    if (r.topic) notes.push(h('p', { class: 'muted small' }, 'Topic ', h('code', {}, r.topic), `: ${groups.length} consumer group${groups.length === 1 ? '' : 's'}.`));
    if (r.listError) notes.push(h('div', { class: 'notice warn', role: 'status' }, 'Listing the groups failed; showing the configured ones: ', r.listError));
    if (r.truncated) notes.push(h('div', { class: 'notice warn', role: 'status' }, 'More groups exist than this page lists.'));
    if (!groups.length) notes.push(h('p', { class: 'muted', testid: 'lag-empty' }, 'No consumer group has committed offsets on the topic, and none is configured.'));
    const sorted = group ? groups : [...groups].sort(sortBy.value === 'name' ? (a, b) => a.group.localeCompare(b.group)
      : (a, b) => healthy(a) - healthy(b) || (b.freshnessSeconds ?? 0) - (a.freshnessSeconds ?? 0)
        || (b.totalLag ?? 0) - (a.totalLag ?? 0) || a.group.localeCompare(b.group));
    patch(body, ...notes, ...sorted.map(groupCard));
    if (admin && groups[0]) admin.update(groups[0]);
  }

  function groupCard(g) {
    const members = g.memberDetails || [];
    const who = m => m ? [m.clientId || '—', m.instanceId ? ` · instance ${m.instanceId}` : '', m.host ? ` · ${m.host}` : ''].join('') : '—';
    const fine = healthy(g);
    const card = (head, rest) => {
      if (group) return h('section', { class: 'card', testid: 'lag-group', 'data-group': g.group, 'data-key': `group:${g.group}` }, head, rest);
      return h('details', { class: 'card group', testid: 'lag-group', 'data-group': g.group, 'data-key': `group:${g.group}`, 'data-healthy': String(fine),
        open: opened.has(g.group) ? opened.get(g.group) : !fine, ontoggle: e => opened.set(g.group, e.currentTarget.open) }, h('summary', {}, head), rest);
    };
    return card(h('div', { class: 'group-head' },
      h('div', { class: 'card-head' },
        h('h2', {}, group ? g.group : h('a', { href: `#/lag/${encodeURIComponent(g.group)}`, testid: 'lag-group-link' }, g.group)),
        h('span', { class: 'muted' }, g.exists === false ? 'no committed offsets' : `state ${g.state || '—'} · ${num(g.members ?? members.length)} member${(g.members ?? members.length) === 1 ? '' : 's'}`),
        g.exists === false ? '' : h('span', { class: `badge ${g.totalLag > 0 ? 's-paused' : 's-completed'}`, testid: 'lag-total' }, `lag ${num(g.totalLag)} records · ${secs(g.maxLagSeconds)}`),
        spark(g.history, 'lag-spark')),
      freshness(g)), [
      g.note ? h('p', { class: 'muted small' }, g.note) : '',
      members.length ? h('ul', { class: 'members', testid: 'lag-members' }, members.map(m => h('li', { testid: 'lag-member' },
        h('span', { class: 'mono' }, m.clientId || '—'), m.instanceId ? [' · instance ', h('span', { class: 'mono' }, m.instanceId)] : '',
        ' · host ', h('span', { class: 'mono' }, m.host || '—')))) : '',
      !(g.partitions || []).length ? h('p', { class: 'muted' }, 'No partitions to report.') : h('div', { class: 'table-box' }, h('table', { class: 'lag cards', testid: 'lag-table' },
        h('thead', {}, h('tr', {}, ['Partition', 'Committed', 'End', 'Lag (records)', 'Lag (seconds)', 'Owner (client id · instance · host)', ...(group ? ['Last hour'] : [])]
          .map((c, i) => h('th', { scope: 'col', class: i && i < 5 ? 'num' : '' }, c)))),
        h('tbody', {}, (g.partitions || []).map(p => h('tr', { testid: 'lag-partition', 'data-partition': p.partition },
          td('Partition', { class: 'num' }, p.partition),
          td('Committed', { class: 'num' }, p.committed < 0 ? 'none' : num(p.committed)),
          td('End', { class: 'num' }, num(p.end)),
          td('Lag (records)', { class: 'num', testid: 'lag-records' }, num(p.lag)),
          td('Lag (seconds)', { class: 'num' }, secs(p.lagSeconds)),
          td('Owner', { testid: 'lag-owner' }, p.error ? h('span', { class: 'error' }, p.error) : who(p.owner) || p.member || '—'),
          group ? td('Last hour', {}, spark(g.partitionHistory?.[p.partition], 'lag-partition-spark')) : '')))))]);
  }

  refresh();
  return () => { gone = true; clearTimeout(timer); };
}

// spark draws a lag series (points a minute apart, oldest first) as a row
// of small bars, with a word on its trend: is the group catching up or
// falling behind? Nothing for fewer than two points.
export function spark(points, testid) {
  if (!points || points.length < 2) return h('span', { class: 'muted small', testid }, points?.length ? 'one minute measured' : '');
  const top = Math.max(1, ...points.map(p => p.records));
  const first = points[0].records, last = points[points.length - 1].records;
  const trend = last > first * 1.1 + 10 ? 'growing' : last < first * 0.9 - 10 ? 'shrinking' : 'flat';
  const label = `lag over the last ${points.length} minutes: ${num(first)} to ${num(last)} records, ${trend}`;
  const bars = h('span', { class: 'spark', role: 'img', 'aria-label': label },
    points.map(p => h('i', { style: { height: `${Math.max(1, Math.round(p.records * 22 / top))}px` }, title: `${num(p.records)} records` })));
  return h('span', { class: 'spark-box', testid, 'data-trend': trend, title: label }, bars,
    h('span', { class: `small trend ${trend}` }, trend === 'growing' ? ' ↗ growing' : trend === 'shrinking' ? ' ↘ shrinking' : ' → flat'));
}

// healthy is a group that needs no look, folded in the overview: it has
// committed, was measured, has no lag and its freshness is under the
// alert's threshold.
function healthy(g) {
  return g.exists !== false && g.state !== 'Unknown' && !(g.totalLag > 0) && !((g.freshnessSeconds ?? 0) > FRESHNESS_ALERT_S);
}

// groupAdmin is a group page's changes: reset its offsets on the topic
// to the earliest record kept or to a time (a preview first says how many
// records the group will read again, and the confirmation names it), or
// delete it. Both only while the group has no member.
function groupAdmin(group) {
  const enc = encodeURIComponent(group);
  const out = h('p', { role: 'status', testid: 'group-admin-result', class: 'muted' });
  const busy = h('p', { class: 'muted small', testid: 'group-admin-busy', hidden: true });
  const to = h('select', { testid: 'group-reset-to', 'aria-label': 'Reset to' },
    h('option', { value: 'earliest' }, 'the earliest record kept'), h('option', { value: 'time' }, 'a time (the first record at or after it)'));
  const at = h('input', { type: 'datetime-local', step: 1, testid: 'group-reset-at', 'aria-label': 'Time (local)', hidden: true });
  to.addEventListener('change', () => { at.hidden = to.value !== 'time'; plan.replaceChildren(); });
  at.addEventListener('change', () => plan.replaceChildren());
  const plan = h('div', { testid: 'group-reset-plan' });
  const preview = h('button', { type: 'button', testid: 'group-reset-preview', onclick: () => reset(true) }, 'Preview reset');
  const del = h('button', { type: 'button', testid: 'group-delete', onclick: remove }, 'Delete group');
  const el = h('section', { class: 'card', testid: 'group-admin' }, h('h2', {}, 'Change this group'),
    h('p', { class: 'muted small' }, 'Only while the group has no member: stop its consumers first. A reset moves its committed offsets on the topic; '
      + 'its consumers read from there when they start again (an ETL reprocessing a day). Every change is in the audit log.'),
    busy, h('div', { class: 'actions wrap' }, h('span', {}, 'Reset offsets to '), to, at, preview, del), plan, out);

  function target() {
    if (to.value === 'earliest') return { to: 'earliest', what: 'the earliest record kept' };
    const d = new Date(at.value);
    if (!at.value || Number.isNaN(d.getTime())) throw new Error('pick the time to reset to');
    return { to: d.toISOString(), what: `${d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}` };
  }
  async function reset(dry, planned) {
    let t;
    try { t = target(); } catch (e) { out.className = 'error'; out.textContent = e.message; return; }
    const body = { to: t.to, dryRun: dry };
    if (!dry) {
      const ok = await confirmDialog('Reset the group\'s offsets?',
        `Move consumer group ${group} to ${t.what}? When its consumers start again they read ${num(planned.replay)} record${planned.replay === 1 ? '' : 's'} again`
        + `${planned.skip ? ` and skip ${num(planned.skip)}` : ''}.`, 'Reset');
      if (!ok) return;
      if (ok.reason) body.reason = ok.reason;
    }
    try {
      const p = await api(`/v1/lag/groups/${enc}/reset`, { method: 'POST', body: JSON.stringify(body) });
      out.className = 'muted';
      out.textContent = '';
      if (dry) {
        plan.replaceChildren(h('p', { testid: 'group-reset-summary' }, `A reset to ${t.what} makes the group read ${num(p.replay)} record${p.replay === 1 ? '' : 's'} again`
          + `${p.skip ? ` and skip ${num(p.skip)}` : ''}:`),
          h('div', { class: 'table-box' }, h('table', { class: 'cards', testid: 'group-reset-partitions' },
            h('thead', {}, h('tr', {}, ['Partition', 'Committed now', 'After the reset', 'End'].map(c => h('th', { scope: 'col', class: 'num' }, c)))),
            h('tbody', {}, (p.partitions || []).map(x => h('tr', {},
              td('Partition', { class: 'num' }, x.partition), td('Committed now', { class: 'num' }, x.from < 0 ? 'none' : num(x.from)),
              td('After the reset', { class: 'num' }, num(x.to)), td('End', { class: 'num' }, num(x.end))))))),
          h('div', { class: 'actions' }, h('button', { type: 'button', class: 'primary', testid: 'group-reset-apply', onclick: () => reset(false, p) }, 'Reset…')));
      } else {
        plan.replaceChildren();
        out.textContent = `Reset: group ${group} now starts at ${t.what}; it reads ${num(p.replay)} record${p.replay === 1 ? '' : 's'} again when its consumers start.`;
      }
    } catch (e) {
      out.className = 'error';
      out.textContent = `${dry ? 'Preview' : 'Reset'} failed: ${errorText(e)}`;
    }
  }
  async function remove() {
    const ok = await confirmDialog('Delete this consumer group?', `Delete consumer group ${group} and its committed offsets? A consumer that joins it later starts by its own reset policy.`, 'Delete');
    if (!ok) return;
    try {
      await api(`/v1/lag/groups/${enc}`, ok.reason ? { method: 'DELETE', body: JSON.stringify({ reason: ok.reason }) } : { method: 'DELETE' });
      location.hash = '#/lag';
    } catch (e) {
      out.className = 'error';
      out.textContent = `Delete failed: ${errorText(e)}`;
    }
  }
  function update(g) {
    const members = g.members ?? (g.memberDetails || []).length;
    const idle = g.exists !== false && members === 0;
    preview.disabled = del.disabled = !idle;
    busy.hidden = idle;
    busy.textContent = g.exists === false ? 'The brokers know no committed offsets of this group: nothing to reset.'
      : `${num(members)} member${members === 1 ? '' : 's'}: stop its consumers to reset or delete it.`;
  }
  return { el, update };
}

// freshness shows a group's freshness (freshnessSeconds): how soon its
// readers see an event committed now, outbox included; coloured past the
// alert's threshold. A group that never committed has none to show.
function freshness(g) {
  if (g.exists === false || g.freshnessSeconds == null) return '';
  const f = g.freshnessSeconds, late = f > FRESHNESS_ALERT_S;
  const unknown = g.state === 'Unknown'; // lag not measured: the outbox's part only
  const text = f === 0 && !unknown ? 'fresh: nothing waiting' : `events visible within ${unknown ? 'at least ' : ''}${secs(f)}`;
  return h('p', { class: 'freshness', testid: 'lag-freshness', 'data-seconds': f, 'data-late': late ? 'true' : 'false' },
    h('span', { class: `badge ${late ? 's-failed' : 's-completed'}`, testid: 'lag-freshness-value' }, text),
    h('span', { class: 'muted small', testid: 'lag-freshness-note' },
      f === 0 ? ' No committed event waits for this group' : ' The oldest committed event this group has not applied waited this long',
      g.freshnessCountsOutbox ? ", counting events still in the store's outbox." : ' on the topic; the store\'s outbox could not be read, so events still in it are not counted.',
      late ? ` Past ${FRESHNESS_ALERT_S} s: alert SNAPSHOT_FRESHNESS_LOW.` : ''));
}

// ---- dead letters ----

export function deadLettersPage(view) {
  const runId = hashParams().get('runId') || '';
  // ?by=error|run: the letters counted by error code or by run, each
  // group retried as one.
  const by = ['error', 'run'].includes(hashParams().get('by')) ? hashParams().get('by') : '';
  let rows = [], cursor = '', error = null, loaded = false, groups = null;
  const bySelect = h('select', { testid: 'dl-group-by', 'aria-label': 'Group by' },
    h('option', { value: '' }, 'each letter'), h('option', { value: 'error' }, 'error code'), h('option', { value: 'run' }, 'run'));
  bySelect.value = by;
  bySelect.addEventListener('change', () => {
    history.replaceState(null, '', `#/dead-letters${bySelect.value ? `?by=${bySelect.value}` : ''}`);
    dispatchEvent(new HashChangeEvent('hashchange'));
  });
  const out = h('p', { role: 'status', testid: 'dl-result', class: 'muted' });
  const body = h('div');
  const more = h('button', { type: 'button', testid: 'dl-more', hidden: true, onclick: () => load(true) }, 'Load more');
  const retryAll = h('button', { type: 'button', testid: 'dl-retry-all', onclick: () => retry({ all: true }, 'every dead letter') }, 'Retry all');
  const runInput = h('input', { name: 'runId', value: runId, placeholder: 'all runs', testid: 'dl-run-input' });
  view.append(h('div', { class: 'run-title' }, h('h1', {}, 'Dead letters'), h('div', { class: 'actions' }, retryAll)),
    h('p', { class: 'muted small' }, 'Outbox records the relay gave up publishing after its retries. Retrying puts a record back in the outbox, so the relay publishes it again.'),
    h('form', { class: 'tenant', onsubmit: e => {
      e.preventDefault();
      const v = runInput.value.trim();
      history.replaceState(null, '', `#/dead-letters${v ? `?runId=${encodeURIComponent(v)}` : ''}`);
      dispatchEvent(new HashChangeEvent('hashchange'));
    } }, h('label', { for: 'dl-run' }, 'Run'), runInput, h('button', { type: 'submit' }, 'Filter')),
    h('p', { class: 'small' }, h('label', {}, 'Group by ', bySelect)),
    out, body, h('div', { class: 'actions' }, more));
  runInput.id = 'dl-run';
  document.title = 'Dead letters · runstream';

  async function load(next) {
    if (by) {
      try {
        const r = await api(`/v1/dead-letters/groups?by=${by}`);
        groups = r;
        error = null;
        loaded = true;
      } catch (e) {
        error = e;
      }
      render();
      return;
    }
    const p = new URLSearchParams({ limit: 50 });
    if (runId) p.set('runId', runId);
    if (next) p.set('cursor', cursor);
    try {
      const r = await api(`/v1/dead-letters?${p}`);
      rows = next ? rows.concat(r.deadLetters || []) : (r.deadLetters || []);
      cursor = r.nextCursor || '';
      error = null;
      loaded = true;
    } catch (e) {
      error = e;
    }
    render();
  }

  function render() {
    more.hidden = !cursor;
    retryAll.hidden = !rows.length || !!runId;
    if (error?.status === 403) { retryAll.hidden = true; patch(body, forbidden('The dead-letter page', error)); return; }
    const err = error ? h('div', { class: 'notice error', role: 'alert', testid: 'dl-error' }, 'Could not list dead letters: ', errorText(error)) : '';
    if (by) {
      const gs = groups?.groups || [];
      retryAll.hidden = !gs.length;
      more.hidden = true;
      if (!gs.length) {
        patch(body, err, loaded && !error ? h('p', { class: 'muted', testid: 'dl-empty' }, 'No dead letters: the relay has published every record.') : '');
        return;
      }
      const what = g => by === 'error' ? `the ${num(g.count)} dead letter${g.count === 1 ? '' : 's'} with error ${g.key}` : `the ${num(g.count)} dead letter${g.count === 1 ? '' : 's'} of run ${g.key}`;
      patch(body, err, groups.truncated ? h('p', { class: 'notice', role: 'status' }, 'More groups exist than the 100 largest listed here.') : '',
        h('div', { class: 'table-box' }, h('table', { class: 'cards', testid: 'dl-groups' },
          h('thead', {}, h('tr', {}, [by === 'error' ? 'Error code' : 'Run', 'Letters', 'First failed', 'Last failed', by === 'error' ? 'An example' : 'Tenant', '']
            .map((c, i) => h('th', { scope: 'col', class: i === 1 ? 'num' : '' }, c)))),
          h('tbody', {}, gs.map(g => h('tr', { testid: 'dl-group', 'data-key': g.key },
            td(by === 'error' ? 'Error code' : 'Run', { class: 'mono' }, by === 'run' ? h('a', { href: `#/dead-letters?runId=${encodeURIComponent(g.key)}` }, g.key) : g.key),
            td('Letters', { class: 'num', testid: 'dl-group-count' }, num(g.count)),
            td('First failed', {}, when(g.firstFailedAt)),
            td('Last failed', {}, when(g.lastFailedAt)),
            td(by === 'error' ? 'An example' : 'Tenant', { class: 'clip', title: g.example }, g.example),
            td('', {}, h('button', { type: 'button', testid: 'dl-group-retry',
              onclick: () => retry(by === 'error' ? { errorCode: g.key } : { runId: g.key }, what(g)) }, 'Retry group'))))))));
      return;
    }
    if (!rows.length) {
      patch(body, err, loaded && !error ? h('p', { class: 'muted', testid: 'dl-empty' }, runId ? `No dead letters for run ${runId}.` : 'No dead letters: the relay has published every record.') : '');
      return;
    }
    patch(body, err, h('div', { class: 'table-box' }, h('table', { class: 'cards', testid: 'dl-table' },
      h('thead', {}, h('tr', {}, ['Id', 'Run', 'Seq', 'Type', 'Tenant', 'Attempts', 'Last error', 'Dead since', ''].map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map(d => h('tr', { testid: 'dl-row', 'data-id': d.id, 'data-key': `dl:${d.id}` },
        td('Id', { class: 'num' }, h('a', { href: `#/dead-letters/${d.id}`, testid: 'dl-link' }, d.id)),
        td('Run', { class: 'mono' }, h('a', { href: `#/runs/${encodeURIComponent(d.runId)}` }, d.runId)),
        td('Seq', { class: 'num' }, d.runSeq),
        td('Type', {}, d.eventType),
        td('Tenant', {}, d.tenantId),
        td('Attempts', { class: 'num' }, d.attempts),
        td('Last error', { class: 'clip', title: d.lastError, testid: 'dl-last-error' }, d.lastError),
        td('Dead since', {}, when(d.deadAt)),
        td('', {}, h('button', { type: 'button', testid: 'dl-retry', onclick: () => retry({ ids: [d.id] }, `dead letter ${d.id} (run ${d.runId}, event ${d.runSeq})`) }, 'Retry'))))))));
  }

  async function retry(body, what) {
    const ok = await confirmDialog('Retry dead letters?', `Put ${what} back in the outbox? The relay publishes it again; consumers may see it twice (they deduplicate by eventId).`, 'Retry');
    if (!ok) return;
    if (ok.reason) body = { ...body, reason: ok.reason };
    try {
      const r = await api('/v1/dead-letters/retry', { method: 'POST', body: JSON.stringify(body) });
      out.className = '';
      out.textContent = `Retried ${num(r.retried)} dead letter${r.retried === 1 ? '' : 's'}: back in the outbox.`;
    } catch (e) {
      out.className = 'error';
      out.textContent = `Retry failed: ${errorText(e)}`;
    }
    load(false);
  }

  load(false);
  return () => {};
}

export function deadLetterPage(view, id) {
  const out = h('p', { role: 'status', testid: 'dl-result', class: 'muted' });
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  view.append(h('p', {}, h('a', { href: '#/dead-letters' }, '← All dead letters')), h('h1', {}, `Dead letter ${id}`), out, body);
  document.title = `Dead letter ${id} · runstream`;
  (async () => {
    let r;
    try {
      r = await api(`/v1/dead-letters/${encodeURIComponent(id)}`);
    } catch (e) {
      body.replaceChildren(e.status === 403 ? forbidden('The dead-letter page', e)
        : e.status === 404 ? h('div', { class: 'not-found', testid: 'not-found' }, h('p', {}, `No dead letter ${id}: it was retried, or never existed. `), h('a', { href: '#/dead-letters' }, 'All dead letters'))
          : h('div', { class: 'notice error', role: 'alert', testid: 'dl-error' }, 'Could not read the dead letter: ', errorText(e)));
      return;
    }
    const d = r.deadLetter;
    const item = (k, v, testid) => [h('dt', {}, k), h('dd', { testid }, v)];
    const retryBtn = h('button', { type: 'button', class: 'primary', testid: 'dl-retry', onclick: async () => {
      const ok = await confirmDialog('Retry this dead letter?', `Put dead letter ${d.id} (run ${d.runId}, event ${d.runSeq}) back in the outbox? The relay publishes it again.`, 'Retry');
      if (!ok) return;
      retryBtn.disabled = true;
      try {
        const x = await api(`/v1/dead-letters/${encodeURIComponent(id)}/retry`,
          ok.reason ? { method: 'POST', body: JSON.stringify({ reason: ok.reason }) } : { method: 'POST' });
        out.className = '';
        out.textContent = `Retried ${num(x.retried)}: back in the outbox; this dead letter is gone.`;
      } catch (e) {
        out.className = 'error';
        out.textContent = `Retry failed: ${errorText(e)}`;
        retryBtn.disabled = false;
      }
    } }, 'Retry');
    body.replaceChildren(
      h('div', { class: 'actions' }, retryBtn),
      h('div', { class: 'run-meta' }, h('dl', {},
        item('Run', h('a', { href: `#/runs/${encodeURIComponent(d.runId)}`, class: 'mono' }, d.runId)), item('Event', `${d.runSeq} · ${d.eventType}`),
        item('Tenant', d.tenantId), item('Event id', h('span', { class: 'mono' }, d.eventId || '—')), item('Attempts', d.attempts),
        item('First failed', when(d.firstFailedAt)), item('Dead since', when(d.deadAt)))),
      h('h2', {}, 'Last error'), h('pre', { class: 'box error', testid: 'dl-detail-error' }, d.lastError || '—'),
      h('h2', {}, 'The record the relay would publish'), h('pre', { class: 'box', testid: 'dl-record' }, JSON.stringify(r.record, null, 2)));
  })();
  return () => {};
}

// ---- rebuilds ----

export function rebuildsPage(view) {
  const out = h('div', { role: 'status', testid: 'rebuild-result' });
  const list = h('div');
  const tenantIn = h('input', { name: 'tenantId', placeholder: 'tenant id', testid: 'rebuild-tenant' });
  const runsIn = h('textarea', { name: 'runIds', rows: 3, placeholder: 'run ids, one per line (at most 1000)', testid: 'rebuild-runs' });
  const start = async body => {
    const what = body.tenantId ? `every run of tenant ${body.tenantId}` : `${body.runIds.length} run${body.runIds.length === 1 ? '' : 's'}`;
    const ok = await confirmDialog('Start a rebuild?', `Rebuild the snapshots of ${what} from the store? Reads every event of those runs from Postgres.`, 'Rebuild');
    if (!ok) return;
    if (ok.reason) body = { ...body, reason: ok.reason };
    try {
      const r = await api('/v1/rebuilds', { method: 'POST', body: JSON.stringify(body) });
      location.hash = `#/rebuilds/${encodeURIComponent(r.rebuild.id)}`;
    } catch (e) {
      out.replaceChildren(e.status === 403 ? forbidden('Rebuilding', e) : h('p', { class: 'error', role: 'alert', testid: 'rebuild-error' }, `Could not start the rebuild: ${errorText(e)}`));
    }
  };
  view.append(h('h1', {}, 'Rebuilds'),
    h('p', { class: 'muted small' }, 'A rebuild recomputes snapshots from the store (Postgres) and writes them to Redis: after Redis lost data, or to refill what the runs list says is missing. One runs at a time per API process; every API replica reports its progress. A single run: Resync on its page.'),
    h('form', { class: 'stack', testid: 'rebuild-form', onsubmit: e => {
      e.preventDefault();
      const t = tenantIn.value.trim();
      const ids = runsIn.value.split(/[\s,]+/).map(x => x.trim()).filter(Boolean);
      if (!t && !ids.length) { out.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'Give a tenant id, or run ids.')); return; }
      if (t && ids.length) { out.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'Give a tenant id or run ids, not both.')); return; }
      if (ids.length > 1000) { out.replaceChildren(h('p', { class: 'error', role: 'alert' }, `${ids.length} run ids: at most 1000 per rebuild.`)); return; }
      start(t ? { tenantId: t } : { runIds: ids });
    } },
    h('label', { class: 'field' }, h('span', {}, 'Tenant (all its runs)'), tenantIn),
    h('label', { class: 'field' }, h('span', {}, 'or selected runs'), runsIn),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', testid: 'rebuild-start' }, 'Rebuild'))),
    out, h('h2', {}, 'Recent rebuilds'), list);
  document.title = 'Rebuilds · runstream';
  api('/v1/rebuilds').then(r => {
    const rs = r.rebuilds || [];
    list.replaceChildren(rs.length ? h('ul', { class: 'plain', testid: 'rebuild-list' }, rs.map(b => h('li', {},
      h('a', { href: `#/rebuilds/${encodeURIComponent(b.id)}` }, b.id), ` · ${rebuildTarget(b)} · ${b.state} · ${num(b.done)}/${num(b.total)} done, ${num(b.written)} written`,
      b.failed ? `, ${num(b.failed)} failed` : '', ' · started ', when(b.startedAt))))
      : h('p', { class: 'muted' }, 'No rebuild recorded (rebuilds are kept for 7 days).'));
  }, e => list.replaceChildren(e.status === 403 ? forbidden('The rebuild page', e) : h('p', { class: 'error', role: 'alert', testid: 'rebuild-list-error' }, `Could not list rebuilds: ${errorText(e)}`)));
  return () => {};
}

// rebuildTarget names what a rebuild rebuilds: a tenant, or runs by id.
const rebuildTarget = b => (b.search ? 'a search' : b.tenantId ? `tenant ${b.tenantId}` : 'selected runs');

// rebuildCounts says how many runs a rebuild handled, how many it wrote,
// and why it skipped the others (a rebuild of runs Redis already holds
// writes nothing, and says so).
function rebuildCounts(b, pct) {
  const skipped = [
    [b.current, 'already current in Redis'],
    [b.expired, 'ended longer ago than the snapshot TTL, so Redis keeps them no more'],
    [b.unknown, 'unknown to the store'],
  ].filter(([n]) => n > 0).map(([n, why]) => `${num(n)} ${why}`);
  return `${num(b.done)} of ${num(b.total)} runs handled (${pct}%): ${num(b.written ?? 0)} written`
    + (skipped.length ? `; skipped: ${skipped.join(', ')}` : '')
    + (b.failed ? `; ${num(b.failed)} failed` : '') + '.';
}

export function rebuildPage(view, id) {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const status = h('p', { class: 'muted small', testid: 'rebuild-refresh' });
  view.append(h('p', {}, h('a', { href: '#/rebuilds' }, '← Rebuilds')), h('h1', {}, 'Rebuild ', h('span', { class: 'mono' }, id)), status, body);
  document.title = `Rebuild ${id} · runstream`;
  let timer = null, gone = false, okAt = null;
  async function poll() {
    let b;
    try {
      b = (await api(`/v1/rebuilds/${encodeURIComponent(id)}`)).rebuild;
    } catch (e) {
      if (gone) return;
      if (e.status === 403) { patch(body, forbidden('The rebuild page', e)); return; }
      if (e.status === 404) { patch(body, h('div', { class: 'not-found', testid: 'not-found' }, `No rebuild ${id}: it was never started, or its record expired (rebuilds are kept for 7 days).`)); return; }
      patch(status, h('span', { class: 'error', role: 'alert', testid: 'refresh-error' }, `Refresh failed at ${clock(new Date())}: ${errorText(e)}`));
      timer = setTimeout(poll, REBUILD_POLL_MS * 3);
      return;
    }
    if (gone) return;
    okAt = new Date();
    status.textContent = b.state === 'running' ? `Refreshed at ${clock(okAt)}, every second.` : `Finished; read at ${clock(okAt)}.`;
    const pct = b.total ? Math.round(((b.done + b.failed) / b.total) * 100) : b.state === 'running' ? 0 : 100;
    patch(body,
      h('p', { class: 'status-line' }, h('span', { class: `badge s-${b.state === 'done' ? 'completed' : b.state === 'failed' ? 'failed' : 'running'}`, testid: 'rebuild-state' }, b.state.toUpperCase())),
      h('progress', { max: 100, value: pct, testid: 'rebuild-progress', 'aria-label': 'Rebuild progress' }),
      h('p', { testid: 'rebuild-counts' }, rebuildCounts(b, pct)),
      h('div', { class: 'run-meta' }, h('dl', {},
        h('dt', {}, 'Rebuilds'), h('dd', { testid: 'rebuild-target' }, b.search ? `every run matching the search ${b.search}` : b.tenantId ? `every run of tenant ${b.tenantId}` : 'the runs selected by id'),
        h('dt', {}, 'Started'), h('dd', {}, when(b.startedAt)), h('dt', {}, 'Finished'), h('dd', {}, when(b.finishedAt)))),
      b.error ? h('div', { class: 'notice error', role: 'alert', testid: 'rebuild-error' }, b.error) : '');
    if (b.state === 'running') timer = setTimeout(poll, REBUILD_POLL_MS);
  }
  poll();
  return () => { gone = true; clearTimeout(timer); };
}
