// runstream console: one run (#/runs/<runId>): steps, timeline, artifacts,
// the stored events, live updates, Resync; a not-found page for an
// unknown run; every failure shown as such, never as an empty state.

import { h, patch, api, watch, conn, when, dur, size, badge, staleBadge, keepFocus, onTick, errorText, clock, TERMINAL, FAILED_ATTEMPTS_TITLE } from './lib.js';

const EVENTS_PAGE = 50;

function attemptsOf(step) {
  const { attempts, stepId, ...current } = step;
  return [...(attempts || []), current];
}

// Two clocks: durations differ by source, so each says which it is.
//  - Steps table: the engine's own measure when its completion event carries
//    payload.durationMs, else completed − started by event time.
//  - Timeline: completed − started by event time (payload sourceOccurredAt,
//    else the engine's emittedAt): when the engine said the attempt began
//    and ended, including any queueing the engine's measure leaves out.
//  - Neither uses persistedAt (when the store accepted the event).
const elapsed = a => (a.startedAt && a.completedAt ? Date.parse(a.completedAt) - Date.parse(a.startedAt) : null);
const durationSource = a => (a.durationMs == null ? null
  : elapsed(a) != null && Math.abs(elapsed(a) - a.durationMs) <= 1 ? 'event' : 'engine');
const SOURCE_TITLE = {
  engine: 'Reported by the engine in the completion event\'s payload (durationMs): its own measure of the attempt.',
  event: 'Completed − started, by event time (payload sourceOccurredAt, else the engine\'s emittedAt).',
};
const TIMELINE_LEGEND = 'Bars run from each attempt\'s start event to its end event by event time (payload sourceOccurredAt, else the engine\'s emittedAt); a running attempt runs to now. '
  + 'The Steps table\'s durations are the engine\'s own measure (payload durationMs) when reported, so the two can differ. Neither uses persistedAt, the store\'s time.';

export function runPage(view, id) {
  const enc = encodeURIComponent(id);
  let snap = null, snapAt = null, events = [], oldest = 0, newest = 0, evChain = Promise.resolve(), evError = null, evAt = null;
  let stopWatch = null, retry = null, gone = false;
  const openSteps = new Set(), openPayloads = new Set();
  const head = h('div', { class: 'run-meta' });
  const outdated = h('div', { class: 'notice warn', role: 'status', testid: 'run-outdated', hidden: true });
  const ended = h('p', { class: 'muted small', testid: 'run-ended', hidden: true },
    'This run ended and Redis no longer keeps it: its state below was read from the store and will not change, so there are no live updates.');
  const resyncOut = h('span', { role: 'status', testid: 'resync-result', class: 'muted' });
  const resyncBtn = h('button', { type: 'button', testid: 'resync', onclick: resync,
    title: 'Rebuild this run\'s snapshot from the store (FULL resync)' }, 'Resync');
  const steps = h('div'), timeline = h('div'), arts = h('div'), evBox = h('div');
  const evErr = h('div', { class: 'notice error', role: 'alert', testid: 'events-error', hidden: true });
  const older = h('button', { type: 'button', testid: 'events-older', onclick: loadOlder, hidden: true }, 'Older events');
  const title = h('div', { class: 'run-title' }, h('h1', {}, 'Run ', h('span', { class: 'mono', testid: 'run-id' }, id)));
  view.append(h('p', {}, h('a', { href: '#/runs' }, '← All runs')), title, head);
  document.title = `run ${id} · runstream`;

  // The first read decides the page: a snapshot builds the run page; 404
  // is the not-found page (one request, no retry, no actions); any other
  // failure is shown and read again when the API is ready.
  async function first() {
    try {
      const s = await api(`/v1/runs/${enc}/snapshot`);
      if (gone) return;
      build();
      apply(s);
    } catch (e) {
      if (gone) return;
      if (e.status === 404) { notFound(e); return; }
      head.replaceChildren(h('div', { class: 'notice error', role: 'alert', testid: 'run-load-error' },
        h('strong', {}, 'Could not read the run: '), errorText(e), ' Trying again when the API reports it is ready.'));
      retry = setTimeout(first, 5000);
    }
  }

  function notFound(e) {
    document.title = `Run not found · runstream`;
    title.replaceChildren(h('h1', { testid: 'not-found-title' }, 'Run not found'));
    head.replaceChildren(h('div', { class: 'not-found', testid: 'not-found' },
      h('p', {}, 'No run ', h('code', { testid: 'run-id' }, id), ' is known to this console\'s tenant.'),
      h('p', { class: 'muted' }, `The API answered ${e.status} ${e.code || ''}: ${e.message}. `,
        'Check the id (copy it from the runs list): neither the snapshots nor the store know this run.'),
      h('p', {}, h('a', { href: '#/runs', testid: 'not-found-back' }, 'Go to the runs list'), ' · ',
        h('a', { href: `#/runs?runIdPrefix=${encodeURIComponent(id.slice(0, 8))}` }, `search for runs starting with ${id.slice(0, 8)}`))));
  }

  function build() {
    title.append(h('div', { class: 'actions' }, resyncBtn, resyncOut));
    view.append(outdated, ended,
      h('section', { 'aria-labelledby': 'h-steps' }, h('h2', { id: 'h-steps' }, 'Steps'), steps),
      h('section', { 'aria-labelledby': 'h-tl' }, h('h2', { id: 'h-tl' }, 'Timeline'),
        h('p', { class: 'muted small legend', testid: 'timeline-legend' }, TIMELINE_LEGEND), timeline),
      h('section', { 'aria-labelledby': 'h-art' }, h('h2', { id: 'h-art' }, 'Artifacts'), arts),
      h('section', { 'aria-labelledby': 'h-ev' }, h('h2', { id: 'h-ev' }, 'Events'),
        h('p', { class: 'muted small' }, 'From the store (the source of truth), newest first. Emitted: the engine\'s clock (emittedAt); persisted: the store\'s clock (persistedAt).'),
        evErr, evBox, h('div', { class: 'actions' }, older)));
    stopWatch = watch(`/v1/runs/${enc}/watch`, {
      snapshot: apply,
      stale: () => { if (snap) { snap.stale = true; renderAll(); } },
      recovered: () => { if (snap) { snap.stale = false; renderAll(); } },
      // A terminal run past the snapshot TTL: read from the store, final.
      end: () => { ended.hidden = false; },
    }, refetch);
  }

  const refetch = () => api(`/v1/runs/${enc}/snapshot`).then(apply, () => {});

  function apply(s) {
    if (snap && s.lastEventSeq < snap.lastEventSeq) return; // an older copy
    snap = s;
    snapAt = new Date();
    renderAll();
    evChain = evChain.then(loadNewer);
  }

  function renderAll() {
    document.title = `${snap.status} · run ${id} · runstream`;
    keepFocus(() => { renderHead(); renderSteps(); renderTimeline(); renderArtifacts(); });
    renderOutdated();
  }

  // What the page shows may be behind when the API is degraded: say so,
  // with the time it was read.
  function renderOutdated() {
    const st = conn.state();
    const why = {
      degraded: conn.streamState?.reason === 'snapshot_missing' && conn.checks?.redis === 'ok'
        ? 'Redis has no snapshot of this run any more; the projectors are rebuilding it'
        : 'Snapshots are unavailable (Redis is down)',
      offline: 'The API does not answer',
      notready: 'The API is not ready',
      reconnecting: 'Live updates are reconnecting',
      store: null, // snapshots still flow; the events section says what failed
    }[st];
    outdated.hidden = !why || !snap;
    if (why && snap) {
      outdated.textContent = `${why}: this run's state below is as of ${clock(snapAt)} and may be out of date.`;
      if (st === 'degraded' && conn.streamState?.message && conn.streamState.reason !== 'snapshot_missing') outdated.textContent += ` The stream says: ${conn.streamState.message}.`;
    }
    view.classList.toggle('outdated', !!why && !!snap);
  }

  function renderHead() {
    const s = snap;
    const item = (k, v, testid) => [h('dt', {}, k), h('dd', { testid }, v)];
    patch(head,
      h('p', { class: 'status-line' }, badge(s.status, s.substatus), ' ', staleBadge(s.stale),
        s.stale ? h('span', { class: 'muted', testid: 'stale-note' }, ' The projector saw a gap: this view may be behind the store until it resyncs (or press Resync).') : ''),
      s.error ? h('div', { class: 'run-error', role: 'alert', testid: 'run-error' },
        h('strong', {}, s.error.code), ': ', s.error.message) : '',
      h('dl', {},
        item('Tenant', s.tenantId), item('Project / env', `${s.projectId} / ${s.environmentId}`),
        item('Plan', `${s.planId} v${s.planVersion}`), s.engineRunRef ? item('Engine run', s.engineRunRef) : null,
        item('Started', when(s.startedAt)), item('Completed', when(s.completedAt)),
        item('Duration (event time)', dur(s.totalDurationMs), 'run-duration'),
        item('Failed attempts', h('span', { title: FAILED_ATTEMPTS_TITLE }, s.failedSteps ?? 0), 'failed-attempts'), item('Last event seq', s.lastEventSeq, 'last-seq'),
        item('Updated', when(s.updatedAt))));
  }

  const durCell = (a, running) => {
    if (a.durationMs == null) return h('td', { class: 'num', 'data-label': 'Duration' }, running ? 'running' : '—');
    const src = durationSource(a);
    return h('td', { class: 'num', 'data-label': 'Duration', testid: 'step-duration', 'data-source': src, title: SOURCE_TITLE[src] },
      dur(a.durationMs), h('sup', { class: 'src' }, src === 'engine' ? 'engine' : 'event'));
  };

  function renderSteps() {
    const list = snap.steps || [];
    if (!list.length) { patch(steps, h('p', { class: 'muted' }, 'No steps yet.')); return; }
    const cols = ['Step', 'Status', 'Attempt', 'Started', 'Duration', 'Error', 'Artifacts'];
    const th = c => c === 'Duration'
      ? h('th', { scope: 'col', class: 'num', testid: 'steps-duration-header',
        title: `${SOURCE_TITLE.engine}\nOtherwise: ${SOURCE_TITLE.event}` }, 'Duration ', h('span', { class: 'muted' }, '(engine, else event time)'))
      : h('th', { scope: 'col' }, c);
    patch(steps, h('div', { class: 'table-box' }, h('table', { class: 'steps', testid: 'steps-table' },
      h('thead', {}, h('tr', {}, cols.map(th))),
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
            durCell(step, step.status === 'RUNNING'),
            h('td', {}, lastErr ? btn('error-toggle', h('span', { class: lastErr === all.at(-1) ? 'err-code' : 'err-code earlier' },
              lastErr.error.code), lastErr === all.at(-1) ? '' : h('span', { class: 'muted' }, ` (attempt #${lastErr.logicalAttemptId})`))
              : h('span', { class: 'muted' }, '—')),
            h('td', { class: 'num' }, (step.artifacts || []).length)),
          isOpen ? h('tr', { class: 'detail', id: detailId },
            h('td', { colspan: cols.length }, attemptsTable(step.stepId, all))) : null);
      }))));
  }

  function attemptsTable(stepId, all) {
    return h('table', { class: 'attempts', testid: 'attempts-table', 'aria-label': `Attempts of ${stepId}` },
      h('thead', {}, h('tr', {}, ['Attempt', 'Status', 'Started', 'Completed', 'Duration', 'Error', 'Artifacts'].map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, [...all].reverse().map(a => h('tr', { testid: 'attempt-row', 'data-attempt': a.logicalAttemptId },
        h('td', {}, `#${a.logicalAttemptId}`, h('span', { class: 'muted' }, ` (engine ${a.engineAttemptId ?? '—'})`)),
        h('td', {}, badge(a.status)),
        h('td', {}, when(a.startedAt)), h('td', {}, when(a.completedAt)), durCell(a, false),
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
    if (!bars.length) { patch(timeline, h('p', { class: 'muted' }, 'No step has started yet.')); return; }
    const start = a => Date.parse(a.startedAt);
    // Event time only: completedAt, else (running) now, else (a finished
    // run's unfinished attempt) its start.
    const end = a => a.completedAt ? Date.parse(a.completedAt) : TERMINAL.has(snap.status) ? start(a) : Date.now();
    const t0 = Math.min(...bars.map(b => start(b.a)), Date.parse(snap.startedAt) || Infinity);
    const t1 = Math.max(...bars.map(b => end(b.a)), Date.parse(snap.completedAt) || 0, t0 + 1);
    const pct = t => `${((t - t0) / (t1 - t0)) * 100}%`;
    patch(timeline, h('div', { class: 'timeline', testid: 'timeline', role: 'list' },
      bars.map(({ step, a }) => h('div', { class: 'tl-row', role: 'listitem', testid: 'timeline-bar', 'data-key': `tl:${step}#${a.logicalAttemptId}` },
        h('span', { class: 'tl-label' }, `${step} #${a.logicalAttemptId}`),
        h('div', { class: 'tl-track' }, h('div', {
          class: `tl-bar s-${a.status.toLowerCase()}`, style: { left: pct(start(a)), width: `max(3px, ${pct(end(a) + t0 - start(a))})` },
          title: `${step} attempt #${a.logicalAttemptId}: ${a.status}, ${dur(end(a) - start(a))} by event time`,
        })),
        h('span', { class: 'tl-dur num', testid: 'timeline-duration', title: SOURCE_TITLE.event }, dur(end(a) - start(a))))),
      h('div', { class: 'tl-axis muted' }, h('span', {}, new Date(t0).toLocaleTimeString()), h('span', {}, `${dur(t1 - t0)} total, event time`))));
  }

  // The run's artifacts and every step attempt's, once each by uri: the
  // run's own list is only made when it completes (the union of its
  // steps' current attempts' and its own), so a running or failed run's
  // artifacts are its steps'. From says which attempt produced each.
  function artifactsOf(s) {
    const byUri = new Map();
    for (const step of s.steps || []) {
      for (const a of attemptsOf(step)) {
        for (const x of a.artifacts || []) {
          if (x.uri && !byUri.has(x.uri)) byUri.set(x.uri, { ...x, from: `${step.stepId} #${a.logicalAttemptId}` });
        }
      }
    }
    for (const x of s.artifacts || []) {
      if (x.uri && !byUri.has(x.uri)) byUri.set(x.uri, { ...x, from: 'run' });
    }
    return [...byUri.values()];
  }

  function renderArtifacts() {
    const list = artifactsOf(snap);
    patch(arts, list.length ? h('div', { class: 'table-box' }, h('table', { testid: 'artifacts-table' },
      h('thead', {}, h('tr', {}, ['URI', 'From', 'Kind', 'Size', 'SHA-256'].map(c => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, list.map(x => h('tr', { testid: 'artifact-row' }, h('td', {}, h('code', {}, x.uri)),
        h('td', { testid: 'artifact-from' }, x.from), h('td', {}, x.kind),
        h('td', { class: 'num' }, size(x.sizeBytes)), h('td', { class: 'mono', title: x.sha256 || '' }, x.sha256 ? x.sha256.slice(0, 12) : '—'))))))
      : h('p', { class: 'muted', testid: 'artifacts-empty' }, 'No artifacts: neither the run nor its steps reported any.'));
  }

  // Events: the newest page first, then on every change the events after
  // the newest one held; "Older events" pages back by runSeq. A failed
  // read shows its error above whatever was read before; "No events."
  // only ever follows a successful read.
  async function loadNewer() {
    if (!newest && snap) newest = oldest = Math.max(0, snap.lastEventSeq - EVENTS_PAGE);
    let r;
    try {
      r = await api(`/v1/runs/${enc}/events?afterSeq=${newest}&limit=1000`);
    } catch (e) {
      showEventsError(e);
      return;
    }
    evError = null;
    evAt = new Date();
    const got = r.events || [];
    if (got.length) {
      if (!events.length) oldest = got[0].runSeq;
      events = got.reverse().concat(events);
      newest = events[0].runSeq;
    }
    renderEvents();
  }

  async function loadOlder() {
    const after = Math.max(0, oldest - 1 - EVENTS_PAGE);
    let r;
    try {
      r = await api(`/v1/runs/${enc}/events?afterSeq=${after}&limit=${oldest - 1 - after}`);
    } catch (e) {
      showEventsError(e);
      return;
    }
    events = events.concat(r.events.reverse());
    oldest = after + 1;
    renderEvents();
  }

  function showEventsError(e) {
    evError = e;
    renderEvents();
  }

  function renderEvents() {
    evErr.hidden = !evError;
    if (evError) {
      patch(evErr, h('strong', {}, 'Could not read events: '), errorText(evError),
        events.length ? ` The events below were read at ${clock(evAt)} and may be incomplete.` : '');
    }
    older.hidden = oldest <= 1 || !events.length;
    if (!events.length) {
      patch(evBox, evError || !evAt ? '' : h('p', { class: 'muted', testid: 'events-empty' }, 'No events.'));
      return;
    }
    patch(evBox, h('div', { class: 'table-box' }, h('table', { class: 'events', testid: 'events-table' },
      h('thead', {}, h('tr', {}, [['Seq'], ['Type'], ['Step'], ['Attempt'],
        ['Emitted', 'The engine\'s clock: the envelope\'s emittedAt'], ['Persisted', 'The store\'s clock: persistedAt, when Postgres accepted the event'], ['Payload']]
        .map(([c, t]) => h('th', { scope: 'col', title: t }, c)))),
      h('tbody', {}, events.map(e => h('tr', { testid: 'event-row', 'data-seq': e.runSeq, 'data-key': `ev:${e.runSeq}` },
        h('td', { class: 'num' }, e.runSeq), h('td', { testid: 'event-type' }, e.eventType), h('td', {}, e.stepId || '—'),
        h('td', { class: 'num' }, `${e.logicalAttemptId}/${e.engineAttemptId}`),
        h('td', {}, when(e.emittedAt)), h('td', {}, when(e.persistedAt)),
        h('td', {}, e.payload ? h('details', { open: openPayloads.has(e.runSeq),
          ontoggle: ev => ev.target.open ? openPayloads.add(e.runSeq) : openPayloads.delete(e.runSeq) },
        h('summary', {}, 'payload'), h('pre', {}, JSON.stringify(e.payload, null, 2))) : h('span', { class: 'muted' }, '—'))))))));
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
      resyncOut.textContent = `Resync failed: ${errorText(e)}`;
    } finally {
      resyncBtn.disabled = false;
    }
  }

  // Readiness: mark the page when degraded; when the store goes down, read
  // the events again so the section says so; when all recovers, re-read.
  const offConn = conn.on((st, prev) => {
    if (!snap) {
      if (retry && conn.healthy()) { clearTimeout(retry); first(); }
      return;
    }
    renderOutdated();
    if (st === 'store' || (conn.healthy() && prev && !['live', 'idle', 'reconnecting'].includes(prev))) {
      if (conn.healthy()) refetch();
      evChain = evChain.then(loadNewer);
    }
  });
  const offTick = onTick(() => { if (snap && !TERMINAL.has(snap.status)) renderTimeline(); });
  first();
  return () => { gone = true; stopWatch?.(); clearTimeout(retry); offConn(); offTick(); };
}
