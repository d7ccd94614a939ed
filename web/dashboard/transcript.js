// A session's persisted transcript (`session/messages`), newest page first,
// paged backwards with "Load older" (`before_index` = the page's `start`).

import { RpcError } from './rpc.js';
import { el, append, pre, replace } from './dom.js';

const PAGE = 50;

/** One transcript row as an element. */
export function messageRow(m) {
  const head = el('div', { class: 'meta' }, `#${m.seq} ${m.role}`, m.kind !== 'message' ? ` · ${m.kind}` : '', m.truncated ? ' · truncated' : '');
  const row = el('div', { class: `msg role-${safeClass(m.role)} kind-${safeClass(m.kind)}`, 'data-seq': m.seq }, head);
  if (m.kind === 'tool_call') append(row, el('div', { class: 'tool-name' }, m.tool_name ?? ''), pre(m.tool_input ?? {}));
  else if (m.kind === 'tool_result') append(row, el('div', { class: 'tool-name' }, m.tool_name ?? ''), pre(m.content ?? '', 'output'));
  else append(row, el('div', { class: 'text' }, m.content ?? ''));
  return row;
}

// A class name from a daemon word: letters, digits, '-' and '_' only.
function safeClass(s) {
  return String(s ?? '').replace(/[^A-Za-z0-9_-]/g, '_');
}

/** A transcript pane for `session`; `load()` fetches the newest page. */
export function transcriptPane(app, session) {
  const list = el('div', { class: 'transcript', id: 'transcript' });
  const older = el('button', { type: 'button', id: 'load-older', hidden: true }, 'Load older');
  const status = el('p', { class: 'hint', id: 'transcript-status' });
  const node = el('section', { class: 'transcript-pane' }, older, status, list);
  let start = null;

  async function page(before) {
    const params = { session_id: session.session_id, limit: PAGE };
    if (session.chat_mode) params.chat_mode = session.chat_mode;
    if (before !== null) params.before_index = before;
    try {
      const r = await app.call('session/messages', params);
      start = r.start;
      list.prepend(...r.messages.map(messageRow));
      older.hidden = start <= 0;
      replace(status, `${r.total} messages${start > 0 ? `, showing from #${start + 1}` : ''}`);
    } catch (e) {
      if (e instanceof RpcError && e.code === -32000) replace(status, 'No messages yet.');
      else throw e;
    }
  }
  older.addEventListener('click', () => app.guard(page(start)));
  return { node, load: () => page(null), list };
}
