// The dashboard's entry point: pairing, the connection (initialize with the
// tab's token, reconnect with backoff, what a lost connection interrupted),
// navigation between the views, and routing of daemon traffic to them.

import { Peer, RpcError, DISCONNECTED } from './rpc.js';
import { el, replace, setText } from './dom.js';
import { showPairing, token, forget } from './pairing.js';
import { showSessions, showAgents, showHealth } from './sessions.js';
import { transcriptPane } from './transcript.js';
import { Turns } from './turn.js';
import { Approvals } from './approvals.js';
import { Forms } from './forms.js';
import { Logs } from './logs.js';

const $ = (id) => document.getElementById(id);
const main = $('main');
const banner = $('banner');
const conn = $('conn');
const nav = $('nav');

// -32010 reasons (§7.2) that mean this tab's token is not (or no longer) accepted.
const UNPAIRED = {
  token_revoked: 'This browser\'s token was revoked. Pair again with a new code.',
  credential_rejected: 'The daemon no longer accepts this browser\'s token. Pair again with a new code.',
  token_required: 'Pair this browser first.',
  not_initialized: 'The daemon dropped this browser\'s authorization. Pair again with a new code.',
};

const MAX_BACKOFF_MS = 10000;

const turns = new Turns();
const logs = new Logs();
let approvals;
let forms;
let attempts = 0;
let interrupted = '';

const app = {
  peer: null,
  view: 'sessions',
  session: null,
  unpaired: false,

  /** A request on the current connection; an auth failure sends the user to pairing. */
  async call(method, params) {
    if (!this.peer) throw new RpcError(DISCONNECTED, 'not connected');
    try {
      return await this.peer.call(method, params);
    } catch (e) {
      if (e instanceof RpcError && e.code === -32010) unpair(UNPAIRED[e.reason] ?? e.message);
      throw e;
    }
  },
  guard(promise) {
    Promise.resolve(promise).catch((e) => this.report(e));
  },
  report(e) {
    if (e instanceof RpcError && (e.code === DISCONNECTED || e.code === -32010)) return;
    notify(e instanceof RpcError ? `${e.message} (${e.code})` : String(e?.message ?? e), 'error');
  },
  openSession(s) {
    this.session = s;
    go('session');
  },
};

function notify(message, kind = 'info') {
  banner.className = `banner ${kind}`;
  replace(banner, el('span', { id: 'banner-text' }, message), ' ',
    el('button', { type: 'button', class: 'link', on: { click: () => { banner.hidden = true; } } }, 'dismiss'));
  banner.hidden = false;
}

function wsUrl() {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}

function unpair(message) {
  app.unpaired = true;
  forget();
  const peer = app.peer;
  app.peer = null;
  if (peer) peer.close();
  nav.hidden = true;
  setText(conn, 'not paired');
  showPairing(main, message, start);
}

async function connect() {
  setText(conn, 'connecting…');
  const peer = new Peer(wsUrl());
  peer.on('session/update', (p) => (p.type === 'approval_request' ? approvals.add(p) : turns.update(p)));
  peer.on('logs/event', (r) => logs.add(r));
  peer.handle('elicitation/create', (p) => forms.ask(p));
  try {
    await peer.connect();
  } catch {
    retry();
    return;
  }
  peer.onclose = () => lost(peer);
  app.peer = peer;
  let init;
  try {
    init = await app.call('initialize', { protocolVersion: 1, clientCapabilities: { elicitation: { form: {} } }, authToken: token() });
  } catch (e) {
    if (!(e instanceof RpcError && e.code === -32010)) { peer.close(); }
    return;
  }
  attempts = 0;
  logs.reset();
  setText(conn, `connected as ${init.principalId}`);
  conn.className = 'ok';
  nav.hidden = false;
  if (interrupted) {
    notify(`Reconnected. Interrupted by the lost connection: ${interrupted}.`, 'warn');
    interrupted = '';
  } else {
    banner.hidden = true;
  }
  render();
}

function lost(peer) {
  if (app.peer !== peer) return;
  app.peer = null;
  const what = [];
  const t = turns.interruptAll();
  if (t.length) what.push(`${t.length} running turn(s) (${t.join(', ')})`);
  const a = approvals.interruptAll();
  if (a) what.push(`${a} approval request(s)`);
  const f = forms.interruptAll();
  if (f) what.push(`${f} question(s)`);
  interrupted = [interrupted, ...what].filter(Boolean).join('; ');
  notify(`Connection to the daemon lost${interrupted ? `; interrupted: ${interrupted}` : ''}. Reconnecting…`, 'warn');
  retry();
}

function retry() {
  if (app.unpaired) return;
  const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempts);
  attempts += 1;
  conn.className = 'down';
  setText(conn, `disconnected: retrying in ${(delay / 1000).toFixed(1)} s`);
  setTimeout(connect, delay);
}

function go(view) {
  app.view = view;
  for (const b of nav.querySelectorAll('button')) b.classList.toggle('active', b.dataset.view === view);
  render();
}

function render() {
  if (!app.peer) return;
  const views = {
    sessions: () => showSessions(main, app),
    agents: () => showAgents(main, app),
    health: () => showHealth(main, app),
    logs: () => logs.show(main, app),
    session: () => showSession(app.session),
  };
  app.guard((views[app.view] ?? views.sessions)());
}

async function showSession(s) {
  const pane = transcriptPane(app, s);
  const back = el('button', { type: 'button', id: 'back', on: { click: () => go('sessions') } }, '← Sessions');
  const head = el('div', { class: 'toolbar' }, back,
    el('h2', { id: 'session-title' }, s.session_id), el('span', { class: 'badge' }, s.state ?? ''),
    el('span', { class: 'meta' }, s.agent_alias ?? ''));
  const box = s.state === 'killed' ? el('p', { class: 'hint' }, 'This session was killed: its history can be read, not continued.')
    : turns.promptBox(app, s, pane.list);
  replace(main, el('section', { id: 'session-view', 'data-session': s.session_id }, head, pane.node, box));
  await pane.load();
  const running = turns.active.get(s.session_id);
  if (running) pane.list.append(running.node);
}

function start() {
  app.unpaired = false;
  if (!token()) {
    setText(conn, 'not paired');
    showPairing(main, '', start);
    return;
  }
  connect();
}

for (const b of nav.querySelectorAll('button')) b.addEventListener('click', () => go(b.dataset.view));
approvals = new Approvals($('approvals'), app);
forms = new Forms($('forms'));
start();
