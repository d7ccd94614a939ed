// The live log tail: `logs/subscribe` once per connection, `logs/event`
// records kept in a ring of the newest 500 and shown while the view is open.

import { el, replace, when } from './dom.js';

const KEEP = 500;

export class Logs {
  constructor() {
    this.records = [];
    this.list = null;
    this.subscribed = false;
  }

  /** A new connection: the subscription has to be made again. */
  reset() {
    this.subscribed = false;
  }

  line(r) {
    const action = r.event && typeof r.event === 'object' ? r.event.action : '';
    return el('div', { class: `log sev-${Number(r.severity_number) >= 13 ? 'warn' : 'info'}` },
      el('span', { class: 'meta' }, when(r['@timestamp']), ' ', r.severity_text ?? ''), ' ',
      el('span', { class: 'action' }, action ?? ''), ' ', r.message ?? '',
      r.session_id ? el('span', { class: 'meta' }, ' session ', r.session_id) : null,
      r.attributes && Object.keys(r.attributes).length ? el('span', { class: 'meta' }, ' ', JSON.stringify(r.attributes)) : null);
  }

  add(r) {
    this.records.push(r);
    if (this.records.length > KEEP) this.records.shift();
    if (this.list && this.list.isConnected) {
      this.list.append(this.line(r));
      while (this.list.childElementCount > KEEP) this.list.firstChild.remove();
      this.list.scrollTop = this.list.scrollHeight;
    }
  }

  async show(root, app) {
    this.list = el('div', { class: 'logs', id: 'log-lines' }, this.records.map((r) => this.line(r)));
    replace(root, el('section', { id: 'logs-view' }, el('h2', {}, 'Log'), this.list));
    if (!this.subscribed) {
      await app.call('logs/subscribe', {});
      this.subscribed = true;
    }
  }
}
