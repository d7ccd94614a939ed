// The only module that creates elements. Everything it puts on the page is
// text: strings become Text nodes (never innerHTML), no attribute it sets
// can hold a URL or a script (no href, src, style, on*), and bidi controls
// are made visible so an agent cannot reorder what the reader sees.

// Attributes a caller may set; values are always strings.
const ATTRS = new Set([
  'class', 'id', 'type', 'name', 'placeholder', 'for', 'autocomplete', 'inputmode',
  'maxlength', 'pattern', 'min', 'max', 'step', 'role', 'title', 'rows', 'lang',
]);
// Boolean attributes, set when truthy.
const FLAGS = new Set(['disabled', 'hidden', 'required', 'open', 'checked', 'readonly']);

// Bidi embedding, override and isolate controls, and the marks.
const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** `s` as shown: bidi controls replaced by a visible `⟦U+202E⟧`. */
export function clean(s) {
  return String(s).replace(BIDI, (c) => `⟦U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}⟧`);
}

/** A Text node of `s`, cleaned. */
export function text(s) {
  return document.createTextNode(clean(s));
}

/**
 * `el('button', {class: 'x', on: {click}}, 'label', child)`: an element with
 * allow-listed attributes, `value` as a property, listeners, and children
 * (strings and numbers become text; null/false are skipped).
 */
export function el(tag, opts = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(opts)) {
    if (v === undefined || v === null) continue;
    if (k === 'on') {
      for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    } else if (k === 'value') {
      node.value = String(v);
    } else if (FLAGS.has(k)) {
      if (v) node.setAttribute(k, '');
    } else if (ATTRS.has(k) || k.startsWith('data-') || k.startsWith('aria-')) {
      node.setAttribute(k, String(v));
    } else {
      throw new Error(`dom.el: attribute ${k} is not allowed`);
    }
  }
  append(node, ...children);
  return node;
}

/** Appends children (text for strings and numbers). */
export function append(node, ...children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(c instanceof Node ? c : text(c));
  }
  return node;
}

/** Removes every child. */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

/** Replaces the children of `node`. */
export function replace(node, ...children) {
  return append(clear(node), ...children);
}

/** Sets the text of `node` (cleaned). */
export function setText(node, s) {
  node.textContent = clean(s);
  return node;
}

/** Shows or hides `node`. */
export function show(node, visible) {
  node.hidden = !visible;
}

/** A `<pre>` of a JSON value (pretty) or a string as is. */
export function pre(value, cls = 'json') {
  const s = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return el('pre', { class: cls }, s ?? '');
}

/** `2026-01-02T03:04:05Z` as a local time; the raw text if not a date. */
export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}
