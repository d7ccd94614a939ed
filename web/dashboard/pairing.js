// Pairing: the 12-digit code the daemon logs (or `zeroclaw pair` prints) is
// redeemed at POST /pair for a token. The token lives in sessionStorage:
// it survives a reload of this tab but is not shared with other tabs and
// is not written to disk by the browser as localStorage would be. It is
// sent only inside `initialize` over the WebSocket, never in a URL.

import { el, replace } from './dom.js';

const KEY = 'zeroclaw.token';

export function token() {
  return sessionStorage.getItem(KEY);
}

export function forget() {
  sessionStorage.removeItem(KEY);
}

const ANSWERS = {
  invalid_pairing_code: 'That code is not right. Check the code the daemon logged (or run `zeroclaw pair`).',
  pairing_unavailable: 'No pairing code is open (it was used, expired after 10 minutes, or took too many wrong guesses). Run `zeroclaw pair` on the daemon\'s machine for a new one.',
  locked_out: 'Too many wrong codes: try again later.',
};

/** Shows the pairing form in `root` with `notice`; calls `done()` once a token is stored. */
export function showPairing(root, notice, done) {
  const input = el('input', {
    id: 'pair-code', name: 'code', inputmode: 'numeric', autocomplete: 'one-time-code',
    pattern: '[0-9]{12}', maxlength: '12', placeholder: '123456789012', required: true,
  });
  const message = el('p', { id: 'pair-message', class: notice ? 'notice' : 'hint', role: 'status' },
    notice || 'Enter the 12-digit pairing code the daemon logged, or run `zeroclaw pair` in a terminal.');
  const button = el('button', { type: 'submit', id: 'pair-submit' }, 'Pair');
  const form = el('form', { id: 'pair-form', class: 'card' },
    el('h2', {}, 'Pair this browser'), message,
    el('label', { for: 'pair-code' }, 'Pairing code'), input, button);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const code = input.value.replace(/[\s-]/g, '');
    if (!/^[0-9]{12}$/.test(code)) {
      replace(message, 'The code is 12 digits.');
      return;
    }
    button.disabled = true;
    try {
      const r = await fetch('/pair', { method: 'POST', headers: { 'X-Pairing-Code': code }, credentials: 'omit' });
      const body = await r.json().catch(() => ({}));
      if (r.ok && typeof body.token === 'string') {
        sessionStorage.setItem(KEY, body.token);
        done();
        return;
      }
      let why = ANSWERS[body.error] || `Pairing failed (HTTP ${r.status}).`;
      if (body.error === 'locked_out') why += ` (${Number(body.retry_after_secs) || 0} s)`;
      message.className = 'notice';
      replace(message, why);
    } catch {
      message.className = 'notice';
      replace(message, 'The daemon cannot be reached.');
    } finally {
      button.disabled = false;
    }
  });
  replace(root, form);
  input.focus();
}
