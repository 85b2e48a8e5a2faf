// runstream console: the audit log of operator actions (#/operator-actions,
// operators): every dead-letter retry, rebuild and resync that took
// effect, newest first, with who asked, what, how many, when (as the
// header's time switch says; the title has every form) and the reason
// given. GET /v1/operator-actions,
// in pages of 50.

import { h, api, num, when, errorText, forbidden } from './lib.js';

const td = (label, attrs, ...kids) => h('td', { 'data-label': label, ...attrs }, ...kids);
const ACTIONS = {
  'dead-letter.retry': 'Retried a dead letter',
  'dead-letters.retry': 'Retried dead letters',
  'rebuild.start': 'Started a rebuild',
  'run.resync': 'Resynced a run',
};

export function operatorActionsPage(view) {
  const body = h('div', { testid: 'actions-body' }, h('p', { class: 'muted' }, 'Loading…'));
  const more = h('button', { type: 'button', testid: 'actions-more', hidden: true, onclick: () => load(true) }, 'Load older');
  view.append(h('h1', {}, 'Audit log'),
    h('p', { class: 'muted small' }, 'What operators (and tenants, for their own runs) did through the API: dead letters retried, '
      + 'rebuilds started, runs resynced. Kept in the store; recorded once each action took effect.'),
    body, h('div', { class: 'actions' }, more));
  document.title = 'Audit log · runstream';
  let rows = [], before = 0, gone = false;

  async function load(next) {
    try {
      const r = await api(`/v1/operator-actions?limit=50${next && before ? `&before=${before}` : ''}`);
      if (gone) return;
      rows = next ? rows.concat(r.actions || []) : (r.actions || []);
      before = r.nextBefore || 0;
      render(null);
    } catch (e) {
      if (!gone) render(e);
    }
  }

  function render(error) {
    more.hidden = !before;
    if (error?.status === 403) { body.replaceChildren(forbidden('The audit log', error)); return; }
    const err = error ? h('div', { class: 'notice error', role: 'alert', testid: 'actions-error' }, 'Could not read the audit log: ', errorText(error)) : '';
    if (!rows.length) {
      body.replaceChildren(err, error ? '' : h('p', { class: 'muted', testid: 'actions-empty' }, 'No operator action recorded yet.'));
      return;
    }
    body.replaceChildren(err, h('div', { class: 'table-box' }, h('table', { class: 'cards', testid: 'actions-table' },
      h('thead', {}, h('tr', {}, ['When', 'Who', 'Action', 'What', 'Count', 'Reason'].map((c, i) => h('th', { scope: 'col', class: i === 4 ? 'num' : '' }, c)))),
      h('tbody', {}, rows.map(a => h('tr', { testid: 'action-row', 'data-id': a.id, 'data-action': a.action },
        td('When', { testid: 'action-at' }, when(a.at)),
        td('Who', { testid: 'action-actor' }, a.actor),
        td('Action', { testid: 'action-name' }, ACTIONS[a.action] || a.action),
        td('What', { class: 'clip', title: a.target, testid: 'action-target' }, a.target),
        td('Count', { class: 'num', testid: 'action-count' }, num(a.count)),
        td('Reason', { testid: 'action-reason' }, a.reason || h('span', { class: 'muted' }, '—'))))))));
  }

  load(false);
  return () => { gone = true; };
}
