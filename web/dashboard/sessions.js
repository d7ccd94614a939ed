// The sessions list (`session/list`: live, persisted and killed; agent,
// owner, last activity) with a filter box.

import { el, replace, when } from './dom.js';

/** Renders the list into `root`; `open(entry)` opens a session. */
export async function showSessions(root, app) {
  const filter = el('input', { id: 'session-filter', type: 'search', placeholder: 'Filter by id, agent, owner or state' });
  const body = el('tbody', { id: 'session-rows' });
  const count = el('span', { class: 'hint', id: 'session-count' });
  const table = el('table', { class: 'list' },
    el('thead', {}, el('tr', {}, ...['Session', 'State', 'Agent', 'Mode', 'Owner', 'Last activity', 'Messages'].map((h) => el('th', {}, h)))),
    body);
  const refresh = el('button', { type: 'button', on: { click: () => showSessions(root, app) } }, 'Refresh');
  replace(root, el('section', { id: 'sessions-view' },
    el('div', { class: 'toolbar' }, el('h2', {}, 'Sessions'), filter, refresh, count), table));

  const { sessions } = await app.call('session/list', { include_killed: true, limit: 1000 });
  const rows = sessions.map((s) => ({ s, row: row(s, app), key: [s.session_id, s.agent_alias, s.owner_principal_id, s.state, s.chat_mode].join(' ').toLowerCase() }));
  const apply = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = rows.filter((r) => !q || r.key.includes(q));
    replace(body, shown.map((r) => r.row));
    replace(count, `${shown.length} of ${rows.length}`);
  };
  filter.addEventListener('input', apply);
  apply();
}

function row(s, app) {
  const open = el('button', { type: 'button', class: 'link', 'data-session': s.session_id, on: { click: () => app.openSession(s) } }, s.session_id);
  return el('tr', { class: `state-${s.state === 'live' || s.state === 'killed' ? s.state : 'persisted'}` },
    el('td', {}, open),
    el('td', {}, el('span', { class: 'badge' }, s.state)),
    el('td', {}, s.agent_alias ?? ''),
    el('td', {}, s.chat_mode ?? ''),
    el('td', {}, s.owner_principal_id ?? ''),
    el('td', {}, when(s.last_activity)),
    el('td', { class: 'num' }, s.message_count ?? ''));
}

/** Agents with their live and persisted session counts (`agents/status`); a new session per agent. */
export async function showAgents(root, app) {
  const { agents } = await app.call('agents/status', {});
  const body = el('tbody', {}, agents.map((a) => el('tr', {},
    el('td', {}, a.alias), el('td', {}, a.backend ?? ''),
    el('td', { class: 'num' }, a.live_sessions), el('td', { class: 'num' }, a.persisted_sessions),
    el('td', {}, el('button', { type: 'button', 'data-agent': a.alias, on: { click: () => newSession(app, a.alias) } }, 'New session')))));
  replace(root, el('section', { id: 'agents-view' }, el('h2', {}, 'Agents'),
    el('table', { class: 'list' },
      el('thead', {}, el('tr', {}, ...['Agent', 'Backend', 'Live', 'Persisted', ''].map((h) => el('th', {}, h)))), body)));
}

async function newSession(app, alias) {
  const r = await app.call('session/new', { agent_alias: alias });
  app.openSession({ session_id: r.session_id, agent_alias: r.agent_alias, chat_mode: r.chat_mode, state: 'live' });
}

/** Health: `status`. */
export async function showHealth(root, app) {
  const s = await app.call('status', {});
  const items = [
    ['Version', s.server_version], ['PID', s.server_pid], ['Uptime', `${s.uptime_secs} s`],
    ['Principal', s.principal_id], ['Live sessions', s.active_sessions], ['Connections', s.connections],
    ['Ephemeral', s.ephemeral ? 'yes' : 'no'], ['Config', s.config_file], ['Data', s.data_dir],
  ];
  replace(root, el('section', { id: 'health-view' }, el('h2', {}, 'Health'),
    el('dl', { class: 'facts' }, items.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v ?? '')]))));
}
