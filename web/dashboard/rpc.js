// A small JSON-RPC 2.0 peer over one WebSocket (docs/protocol.md §3): our
// requests with numeric ids and a pending map, notifications by method, and
// the daemon's own requests (`elicitation/create`) answered by handlers.

/** A JSON-RPC error (or `disconnected` when the socket went away). */
export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data ?? null;
  }
  get reason() {
    return this.data && typeof this.data === 'object' ? this.data.reason : undefined;
  }
}

export const DISCONNECTED = -1;

export class Peer {
  constructor(url) {
    this.url = url;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Map();
    this.handlers = new Map();
    this.onclose = () => {};
    this.ws = null;
  }

  /** Opens the socket; resolves once open, rejects if it closes first. */
  connect() {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url);
      this.ws = ws;
      let open = false;
      ws.onopen = () => { open = true; resolve(); };
      ws.onmessage = (ev) => this.receive(ev.data);
      ws.onclose = (ev) => {
        this.failAll();
        if (open) this.onclose(ev); else reject(new RpcError(DISCONNECTED, 'cannot connect'));
      };
    });
  }

  close() {
    if (this.ws) this.ws.close();
  }

  /** Sends a request; resolves with its result, rejects with an RpcError. */
  call(method, params = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
        reject(new RpcError(DISCONNECTED, 'not connected'));
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', method, params, id }));
    });
  }

  /** Calls `fn(params)` for each notification `method`. */
  on(method, fn) {
    this.listeners.set(method, fn);
  }

  /** Answers daemon→client requests `method` with `await fn(params)`. */
  handle(method, fn) {
    this.handlers.set(method, fn);
  }

  send(obj) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(obj));
  }

  failAll() {
    for (const { reject } of this.pending.values()) reject(new RpcError(DISCONNECTED, 'connection lost'));
    this.pending.clear();
  }

  receive(data) {
    let msg;
    try { msg = JSON.parse(data); } catch { return; }
    for (const m of Array.isArray(msg) ? msg : [msg]) this.dispatch(m);
  }

  dispatch(m) {
    if (!m || typeof m !== 'object') return;
    if (typeof m.method === 'string') {
      if ('id' in m) this.answer(m); else this.listeners.get(m.method)?.(m.params ?? {});
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.error) p.reject(new RpcError(m.error.code, String(m.error.message ?? ''), m.error.data));
    else p.resolve(m.result);
  }

  async answer(m) {
    const fn = this.handlers.get(m.method);
    if (!fn) {
      this.send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `Unknown method: ${m.method}` } });
      return;
    }
    try {
      this.send({ jsonrpc: '2.0', id: m.id, result: await fn(m.params ?? {}) });
    } catch (e) {
      this.send({ jsonrpc: '2.0', id: m.id, error: { code: -32603, message: String(e?.message ?? e) } });
    }
  }
}
