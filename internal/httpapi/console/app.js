// runstream console: plain ES modules, no build step, no dependencies.
// Routes (every view deep-links; filters live in the hash's query):
//   #/runs?status=&runIdPrefix=&engineRunRef=&plan=&from=&to=&sort=&order=&tenant=
//   #/runs/<runId>
//   #/lag, #/lag/<group>                  (operator)
//   #/dead-letters, #/dead-letters/<id>   (operator)
//   #/rebuilds, #/rebuilds/<id>           (operator)
//   #/retention                           (operator)
//   #/operator-actions                    (operator)
// Data: the /v1 API; live updates through Server-Sent Events; the
// connection indicator from GET /readyz and the page's stream (lib.js).

import { $, h, conn, token, setToken, onToken, TIME_MODES, getTimeMode, setTimeMode } from './lib.js';
import { runsPage } from './runs.js';
import { runPage } from './run.js';
import { lagPage, deadLettersPage, deadLetterPage, rebuildsPage, rebuildPage } from './ops.js';
import { retentionPage } from './retention.js';
import { operatorActionsPage } from './actions.js';

const ROUTES = [
  [/^#\/runs\/([^?]+)/, (v, id) => runPage(v, id)],
  [/^#\/lag\/([^?]+)/, (v, g) => lagPage(v, g)],
  [/^#\/lag(\?|$)/, v => lagPage(v, '')],
  [/^#\/dead-letters\/([^?]+)/, (v, id) => deadLetterPage(v, id)],
  [/^#\/dead-letters(\?|$)/, v => deadLettersPage(v)],
  [/^#\/rebuilds\/([^?]+)/, (v, id) => rebuildPage(v, id)],
  [/^#\/rebuilds(\?|$)/, v => rebuildsPage(v)],
  [/^#\/retention(\?|$)/, v => retentionPage(v)],
  [/^#\/operator-actions(\?|$)/, v => operatorActionsPage(v)],
];

function showTokenState() {
  $('[data-testid=forget-token]').hidden = !token;
}

let leave = null;
function route() {
  leave?.();
  const view = $('#view');
  view.replaceChildren();
  view.className = '';
  const hash = location.hash || '#/runs';
  for (const a of document.querySelectorAll('header nav a')) {
    a.toggleAttribute('aria-current', hash.startsWith(a.getAttribute('href')));
  }
  for (const [re, page] of ROUTES) {
    const m = hash.match(re);
    if (m) { leave = page(view, m[1] && m[1] !== '?' ? decodeURIComponent(m[1]) : ''); return; }
  }
  leave = runsPage(view);
}

const times = $('[data-testid=time-mode]');
times.append(...TIME_MODES.map(([m, label]) => h('option', { value: m, selected: m === getTimeMode() }, label)));
times.addEventListener('change', () => setTimeMode(times.value));

$('[data-testid=forget-token]').addEventListener('click', () => {
  setToken('');
  route();
});
onToken(() => { showTokenState(); conn.poll(); });
showTokenState();
window.addEventListener('hashchange', route);
conn.render();
conn.poll();
route();
