// Elicitation forms (`elicitation/create`, §8.13): a form generated from the
// request's JSON schema; submitting answers the daemon's request with
// `{"action":"accept","content":{…}}`, or decline / cancel.

import { el, replace } from './dom.js';

// One input for one schema property; `read()` gives its value or undefined.
function field(name, prop, required) {
  const id = `field-${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const label = el('label', { for: id }, prop.title ?? name, required ? ' *' : '');
  const help = prop.description ? el('p', { class: 'hint' }, prop.description) : null;
  const choices = Array.isArray(prop.oneOf) ? prop.oneOf.map((o) => [o.const, o.title ?? o.const])
    : Array.isArray(prop.enum) ? prop.enum.map((v) => [v, v]) : null;
  let input;
  let read;
  if (choices) {
    input = el('select', { id, name }, el('option', { value: '' }, '—'), choices.map(([v, t], i) => el('option', { value: String(i) }, String(t))));
    read = () => (input.value === '' ? undefined : choices[Number(input.value)][0]);
  } else if (prop.type === 'boolean') {
    input = el('input', { id, name, type: 'checkbox', checked: prop.default === true });
    read = () => input.checked;
  } else if (prop.type === 'integer' || prop.type === 'number') {
    input = el('input', { id, name, type: 'number', step: prop.type === 'integer' ? '1' : 'any', min: prop.minimum, max: prop.maximum, value: prop.default });
    read = () => (input.value === '' ? undefined : Number(input.value));
  } else if (prop.type === 'object' || prop.type === 'array') {
    input = el('textarea', { id, name, rows: '3', placeholder: 'JSON' });
    read = () => (input.value.trim() === '' ? undefined : JSON.parse(input.value));
  } else {
    input = el('input', { id, name, type: 'text', value: prop.default, maxlength: prop.maxLength });
    read = () => (input.value === '' ? undefined : input.value);
  }
  return { node: el('div', { class: 'field' }, label, input, help), read, required, name };
}

export class Forms {
  constructor(root) {
    this.root = root;
    this.open = new Set();
  }

  /** The `elicitation/create` handler: resolves with the user's answer. */
  ask(params) {
    return new Promise((resolve, reject) => {
      const schema = params.requestedSchema && typeof params.requestedSchema === 'object' ? params.requestedSchema : {};
      const props = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
      const required = new Set(Array.isArray(schema.required) ? schema.required : []);
      const fields = Object.entries(props).map(([n, p]) => field(n, p && typeof p === 'object' ? p : {}, required.has(n)));
      const error = el('p', { class: 'notice', role: 'alert', hidden: true });
      const submit = el('button', { type: 'submit', 'data-action': 'accept' }, 'Submit');
      const decline = el('button', { type: 'button', 'data-action': 'decline' }, 'Decline');
      const cancel = el('button', { type: 'button', 'data-action': 'cancel' }, 'Cancel');
      const form = el('form', { class: 'card elicitation' },
        el('h3', {}, 'Question'), el('div', { class: 'meta' }, 'session ', params.sessionId ?? ''),
        el('p', { class: 'text' }, params.message ?? ''), fields.map((f) => f.node), error,
        el('div', { class: 'buttons' }, submit, decline, cancel));
      const entry = { form, reject };
      const finish = (answer) => { form.remove(); this.open.delete(entry); this.root.hidden = this.root.childElementCount === 0; resolve(answer); };
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const content = {};
        try {
          for (const f of fields) {
            const v = f.read();
            if (v === undefined && f.required) throw new Error(`${f.name} is required`);
            if (v !== undefined) content[f.name] = v;
          }
        } catch (e) {
          error.hidden = false;
          replace(error, e.message);
          return;
        }
        finish({ action: 'accept', content });
      });
      decline.addEventListener('click', () => finish({ action: 'decline' }));
      cancel.addEventListener('click', () => finish({ action: 'cancel' }));
      this.open.add(entry);
      this.root.prepend(form);
      this.root.hidden = false;
    });
  }

  /** The connection is gone: open forms can no longer be answered. */
  interruptAll() {
    const n = this.open.size;
    for (const e of this.open) {
      e.form.classList.add('settled');
      for (const c of e.form.querySelectorAll('button, input, select, textarea')) c.disabled = true;
      e.form.append(el('p', { class: 'notice' }, 'Interrupted: the connection was lost, so the question went unanswered.'));
      e.reject(new Error('connection lost'));
    }
    this.open.clear();
    return n;
  }
}
