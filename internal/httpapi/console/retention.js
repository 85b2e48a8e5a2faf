// runstream console: the store's retention (#/retention, operators): the
// partitions of run_events with their state, size, runs, what holds each
// in the store and their archive files, the retention process's last pass
// and the next removal. GET /v1/retention, refreshed every 10 s.

import { h, patch, api, num, when, clock, size, dur, errorText, forbidden } from './lib.js';

export const RETENTION_REFRESH_MS = 10000;

const td = (label, attrs, ...kids) => h('td', { 'data-label': label, ...attrs }, ...kids);
const STATE_CLASS = { live: 's-running', retired: 's-paused', detached: 's-paused', archived: 's-paused', dropped: 's-completed' };

export function retentionPage(view) {
  const status = h('p', { class: 'muted small', testid: 'retention-refresh', role: 'status' });
  const body = h('div', { testid: 'retention-body' });
  view.append(h('h1', {}, 'Retention'),
    h('p', { class: 'muted small' }, 'run_events is partitioned by the time each run began. With a retention, a partition leaves '
      + 'Postgres once every run in it ended at least that long ago: its events are written to the archive as Parquet, read back '
      + 'and verified, and only then is the partition dropped. The runs stay as tombstones (appends to them answer RUN_ARCHIVED).'),
    status, body);
  document.title = 'Retention · runstream';
  let okAt = null, timer = null, gone = false, denied = false;

  async function refresh() {
    try {
      const r = await api('/v1/retention');
      if (gone) return;
      okAt = new Date();
      patch(status, h('span', { testid: 'refreshed-at', 'data-at': okAt.toISOString() }, `Refreshed at ${clock(okAt)}, every ${RETENTION_REFRESH_MS / 1000} s.`));
      render(r);
    } catch (e) {
      if (gone) return;
      if (e.status === 403) { denied = true; patch(status); patch(body, forbidden('The retention page', e)); return; }
      patch(status, h('span', { class: 'error', role: 'alert', testid: 'refresh-error' },
        `Refresh failed at ${clock(new Date())}: ${errorText(e)}${okAt ? ' Showing the last good answer.' : ''}`));
      if (!okAt) patch(body, h('div', { class: 'notice error', role: 'alert', testid: 'retention-error' }, 'Could not read the retention status: ', errorText(e)));
      else body.classList.add('outdated');
    } finally {
      if (!gone && !denied) timer = setTimeout(refresh, RETENTION_REFRESH_MS);
    }
  }

  function render(r) {
    body.classList.remove('outdated');
    const parts = r.partitions || [];
    const lp = r.lastPass;
    const keep = r.retentionSeconds ? dur(r.retentionSeconds * 1000) : '';
    const summary = !lp
      ? h('div', { class: 'notice warn', role: 'status', testid: 'retention-never' }, 'No retention process ever ran on this store: nothing makes partitions ahead, '
        + 'so new runs keep going into the newest one, which then never becomes old enough to leave. Run `runstream retention run`.')
      : lp.error
        ? h('div', { class: 'notice error', role: 'alert', testid: 'retention-last-pass' }, 'Last pass ', when(lp.at), ` FAILED: ${lp.error}`)
        : h('p', { testid: 'retention-last-pass' }, 'Last pass ', when(lp.at), `: retention ${lp.retentionSeconds ? dur(lp.retentionSeconds * 1000) : 'off'}, `
          + `partitions of ${dur(lp.partitionIntervalSeconds * 1000)}, archive ${lp.archiveUrl || 'none given'}`
          + (lp.dropped?.length ? `; dropped ${lp.dropped.join(', ')}.` : '; dropped nothing.'));
    const next = !r.retentionSeconds
      ? h('p', { class: 'muted', testid: 'retention-next' }, 'Retention is off: no partition leaves the store.')
      : !r.nextRemoval
        ? h('p', { class: 'muted', testid: 'retention-next' }, `Next removal: none yet (retention ${keep}; every older partition has open runs or still takes new runs).`)
        : h('p', { testid: 'retention-next' }, `Next removal: `, h('span', { class: 'mono' }, r.nextRemoval.partition),
          r.nextRemoval.at ? [' from ', when(r.nextRemoval.at)] : ' at the next pass', keep ? ` (retention ${keep}).` : '.');
    const inStore = parts.filter(p => p.state !== 'dropped');
    const totals = h('p', { class: 'muted small', testid: 'retention-totals' },
      `${num(inStore.length)} partition${inStore.length === 1 ? '' : 's'} in the store, ${size(inStore.reduce((a, p) => a + (p.bytes || 0), 0))}; `
      + `${num(parts.reduce((a, p) => a + (p.openRuns || 0), 0))} open runs; `
      + `${num(parts.reduce((a, p) => a + (p.archiveFiles || 0), 0))} archive files, ${size(parts.reduce((a, p) => a + (p.archiveBytes || 0), 0))}.`);
    patch(body, summary, next, totals, !parts.length ? h('p', { class: 'muted' }, 'No partition.') :
      h('div', { class: 'table-box' }, h('table', { class: 'cards', testid: 'retention-table' },
        h('thead', {}, h('tr', {}, ['Partition', 'Runs began', 'State', 'Size', 'Runs', 'Open', 'Archive', 'Held by']
          .map((c, i) => h('th', { scope: 'col', class: [3, 4, 5].includes(i) ? 'num' : '' }, c)))),
        h('tbody', {}, parts.map(p => h('tr', { testid: 'retention-partition', 'data-partition': p.name, 'data-state': p.state },
          td('Partition', { class: 'mono' }, p.name),
          td('Runs began', {}, p.from === '-infinity' ? `before ${p.until} (from before partitioning)` : `${p.from} to ${p.until}`),
          td('State', {}, h('span', { class: `badge ${STATE_CLASS[p.state] || ''}`, testid: 'retention-state' }, p.state)),
          td('Size', { class: 'num' }, p.state === 'dropped' ? '—' : size(p.bytes)),
          td('Runs', { class: 'num' }, num(p.runs)),
          td('Open', { class: 'num', testid: 'retention-open' }, num(p.openRuns)),
          td('Archive', { testid: 'retention-archive' }, p.archiveFiles ? `${num(p.archiveFiles)} file${p.archiveFiles === 1 ? '' : 's'}, ${size(p.archiveBytes)}` : '—'),
          td('Held by', { testid: 'retention-hold' }, p.hold || (p.removableFrom ? ['removable from ', when(p.removableFrom)] : '—'))))))));
  }

  refresh();
  return () => { gone = true; clearTimeout(timer); };
}
