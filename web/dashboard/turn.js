// The live stream of a turn (`session/update`, docs/protocol.md §8.5):
// message chunks as text, thoughts folded in a <details>, tool calls with
// their results, the outcome. Chunks are buffered and written once per
// animation frame, so a long turn costs one DOM write per frame. Each write
// relays out the whole segment, so once a segment is long the writes are
// spaced by its length (1 ms per 256 characters, at most 1 s): the layout
// work per second stays flat and the page keeps up with the socket.

import { clean, el, pre, setText, text } from './dom.js';

const LONG_SEGMENT = 32768;
const CHARS_PER_MS = 256;
const MAX_SPACING_MS = 1000;

class TurnView {
  constructor(prompt) {
    this.body = el('div', { class: 'turn-body' });
    this.status = el('div', { class: 'turn-status', role: 'status' }, 'running…');
    this.node = el('div', { class: 'turn running', 'aria-live': 'polite' },
      el('div', { class: 'msg role-user' }, el('div', { class: 'meta' }, 'you'), el('div', { class: 'text' }, prompt)),
      el('div', { class: 'msg role-assistant' }, el('div', { class: 'meta' }, 'assistant'), this.body), this.status);
    this.segment = null; // { kind: 'text'|'thought', node: Text }
    this.buffer = '';
    this.scheduled = false;
    this.results = new Map();
  }

  chunk(kind, s) {
    if (!this.segment || this.segment.kind !== kind) {
      this.flush();
      const node = text('');
      if (kind === 'text') this.body.append(el('div', { class: 'text' }, node));
      else this.body.append(el('details', { class: 'thought' }, el('summary', {}, 'Thinking'), el('pre', { class: 'output' }, node)));
      this.segment = { kind, node, length: 0 };
    }
    this.buffer += s;
    if (!this.scheduled) {
      this.scheduled = true;
      const frame = () => requestAnimationFrame(() => this.flush());
      const n = this.segment.length;
      if (n > LONG_SEGMENT) setTimeout(frame, Math.min(MAX_SPACING_MS, n / CHARS_PER_MS)); else frame();
    }
  }

  flush() {
    this.scheduled = false;
    if (this.segment && this.buffer) {
      this.segment.node.appendData(clean(this.buffer));
      this.segment.length += this.buffer.length;
    }
    this.buffer = '';
  }

  update(p) {
    switch (p.type) {
      case 'agent_message_chunk': this.chunk('text', String(p.text ?? '')); break;
      case 'agent_thought_chunk': this.chunk('thought', String(p.text ?? '')); break;
      case 'tool_call': {
        this.flush();
        this.segment = null;
        const result = el('pre', { class: 'output pending' }, 'waiting for the result…');
        this.results.set(p.toolCallId, result);
        this.body.append(el('div', { class: 'tool', 'data-tool-call': p.toolCallId },
          el('div', { class: 'tool-name' }, 'tool: ', p.name ?? ''), pre(p.rawInput ?? {}), result));
        break;
      }
      case 'tool_result': {
        const r = this.results.get(p.toolCallId);
        if (r) { r.classList.remove('pending'); setText(r, p.rawOutput ?? ''); }
        break;
      }
      case 'turn_complete':
        this.flush();
        this.end(p.outcome, p.reason);
        break;
      default: break; // §8.5: unknown types are ignored
    }
  }

  end(outcome, reason) {
    this.node.classList.remove('running');
    this.node.classList.add(`outcome-${outcome === 'completed' || outcome === 'cancelled' ? outcome : 'failed'}`);
    setText(this.status, reason && outcome !== 'completed' ? `${outcome}: ${reason}` : outcome);
  }
}

/** The turns running in this page, by session. */
export class Turns {
  constructor() {
    this.active = new Map();
  }

  update(p) {
    this.active.get(p.sessionId)?.update(p);
  }

  /** Marks every running turn interrupted; returns their session ids. */
  interruptAll() {
    const ids = [...this.active.keys()];
    for (const v of this.active.values()) { v.flush(); v.end('interrupted', 'connection to the daemon lost'); }
    this.active.clear();
    return ids;
  }

  /** The prompt box of `session`; turns are appended to `list`. */
  promptBox(app, session, list) {
    const input = el('textarea', { id: 'prompt', rows: '3', placeholder: 'Prompt (Ctrl+Enter sends)' });
    const send = el('button', { type: 'submit', id: 'send' }, 'Send');
    const cancel = el('button', { type: 'button', id: 'cancel', disabled: true }, 'Cancel');
    const form = el('form', { class: 'prompt-box' }, input, el('div', { class: 'buttons' }, send, cancel));
    const id = session.session_id;
    cancel.addEventListener('click', () => app.guard(app.call('session/cancel', { session_id: id })));
    input.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' && ev.ctrlKey) form.requestSubmit(); });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const prompt = input.value;
      if (!prompt.trim() || this.active.has(id)) return;
      const view = new TurnView(prompt);
      this.active.set(id, view);
      list.append(view.node);
      input.value = '';
      cancel.disabled = false;
      try {
        const r = await app.call('session/prompt', { session_id: id, prompt });
        if (view.node.classList.contains('running')) view.end(r.stop_reason === 'cancelled' ? 'cancelled' : 'completed');
      } catch (e) {
        if (view.node.classList.contains('running')) view.end('failed', e.message);
        app.report(e);
      } finally {
        if (this.active.get(id) === view) this.active.delete(id);
        cancel.disabled = true;
      }
    });
    return form;
  }
}
