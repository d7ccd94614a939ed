// Approval requests (`approval_request` updates, §8.5) as cards with the
// tool, its arguments and a live countdown, answered with `session/approve`
// (§8.12): allow once, allow always, reject.

import { el, pre, replace, setText } from './dom.js';

const DECISIONS = [['allow_once', 'Allow once'], ['allow_always', 'Always allow'], ['reject', 'Reject']];

export class Approvals {
  constructor(root, app) {
    this.root = root;
    this.app = app;
    this.cards = new Map();
  }

  add(p) {
    const secs = Math.max(0, Number(p.timeoutSecs) || 0);
    const deadline = Date.now() + secs * 1000;
    const countdown = el('span', { class: 'countdown' });
    const state = el('p', { class: 'hint', role: 'status' });
    const buttons = DECISIONS.map(([d, label]) => el('button', { type: 'button', 'data-decision': d }, label));
    const card = el('div', { class: 'card approval', 'data-request': p.requestId },
      el('h3', {}, 'Approval: ', p.toolName ?? ''),
      el('div', { class: 'meta' }, 'session ', p.sessionId ?? '', ' · ', countdown),
      pre(p.argumentsSummary ?? '', 'output'), el('div', { class: 'buttons' }, buttons), state);
    const entry = { card, buttons, state, timer: 0 };
    const tick = () => {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      if (left > 0) { setText(countdown, `${left} s left`); return; }
      this.settle(entry, 'Timed out: the daemon denied it.');
    };
    entry.timer = setInterval(tick, 1000);
    tick();
    buttons.forEach((b, i) => b.addEventListener('click', () => this.decide(p, entry, DECISIONS[i][0])));
    this.cards.set(p.requestId, entry);
    this.root.prepend(card);
    this.root.hidden = false;
  }

  async decide(p, entry, decision) {
    entry.buttons.forEach((b) => { b.disabled = true; });
    try {
      const r = await this.app.call('session/approve', { session_id: p.sessionId, request_id: p.requestId, decision });
      this.settle(entry, r.acknowledged ? `Answered: ${decision}.` : 'Too late: already answered or timed out.');
      setTimeout(() => this.remove(p.requestId), 3000);
    } catch (e) {
      entry.buttons.forEach((b) => { b.disabled = false; });
      this.app.report(e);
    }
  }

  settle(entry, message) {
    clearInterval(entry.timer);
    entry.buttons.forEach((b) => { b.disabled = true; });
    entry.card.classList.add('settled');
    replace(entry.state, message);
  }

  remove(id) {
    const e = this.cards.get(id);
    if (!e) return;
    e.card.remove();
    this.cards.delete(id);
    this.root.hidden = this.root.childElementCount === 0;
  }

  /** The connection is gone: every open request resolves as a denial (§8.12). */
  interruptAll() {
    let n = 0;
    for (const [id, e] of this.cards) {
      if (e.card.classList.contains('settled')) {
        this.remove(id);
      } else {
        this.settle(e, 'Interrupted: the connection was lost, so the daemon denied it.');
        n += 1;
      }
    }
    return n;
  }
}
