"""A minimal local model server speaking the OpenAI Responses API stream
(POST .../responses, SSE), enough for codex to run whole turns offline.

A prompt containing `run: CMD` is answered with an `exec_command` function
call of CMD; the turn after the tool's output says what the command printed;
any other prompt is echoed back in pieces. Usage: responses_server.py PORT LOG
"""
import json, sys, http.server, socketserver

LOG = open(sys.argv[2], 'a')

def sse(ev):
    return f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n".encode()

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "local-model", "object": "model"}], "models": []}).encode()
        self.send_response(200); self.send_header('content-type', 'application/json'); self.send_header('content-length', str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get('content-length', 0)); raw = self.rfile.read(n)
        LOG.write(self.path + ' ' + raw.decode('utf-8', 'replace') + '\n'); LOG.flush()
        try: req = json.loads(raw)
        except Exception: req = {}
        text = "Hello from the local model. "
        last = ''
        for item in req.get('input', []):
            if item.get('role') == 'user':
                for c in item.get('content', []):
                    if c.get('type') == 'input_text': last = c['text']
        inp = req.get('input', [])
        last_item = inp[-1] if inp else {}
        if last_item.get('type') == 'function_call_output':
            out = last_item.get('output')
            words = ["The", " command", " said:", " ", json.dumps(str(out)[-120:])]
        elif 'run:' in last:
            cmd = last.split('run:', 1)[1].strip()
            self.send_response(200); self.send_header('content-type', 'text/event-stream'); self.send_header('transfer-encoding', 'chunked'); self.end_headers()
            def w(b):
                self.wfile.write(f"{len(b):x}\r\n".encode() + b + b"\r\n"); self.wfile.flush()
            w(sse({"type": "response.created", "response": {"id": "resp_t"}}))
            w(sse({"type": "response.output_item.done", "item": {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": json.dumps({"cmd": cmd})}}))
            w(sse({"type": "response.completed", "response": {"id": "resp_t", "usage": {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1, "output_tokens_details": None, "total_tokens": 2}}}))
            w(b'')
            return
        else:
            words = ["I", " read", " your", " prompt:", " ", json.dumps(last[-60:])]
        self.send_response(200); self.send_header('content-type', 'text/event-stream'); self.send_header('transfer-encoding', 'chunked'); self.end_headers()
        def w(b):
            self.wfile.write(f"{len(b):x}\r\n".encode() + b + b"\r\n"); self.wfile.flush()
        w(sse({"type": "response.created", "response": {"id": "resp_1"}}))
        w(sse({"type": "response.output_item.added", "item": {"type": "message", "role": "assistant", "id": "msg_1", "content": []}}))
        full = ''
        for word in words:
            full += word
            w(sse({"type": "response.output_text.delta", "delta": word, "item_id": "msg_1", "output_index": 0, "content_index": 0}))
        w(sse({"type": "response.output_item.done", "item": {"type": "message", "role": "assistant", "id": "msg_1", "content": [{"type": "output_text", "text": full}]}}))
        w(sse({"type": "response.completed", "response": {"id": "resp_1", "usage": {"input_tokens": 1, "input_tokens_details": None, "output_tokens": len(words), "output_tokens_details": None, "total_tokens": 1 + len(words)}}}))
        w(b'')

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

S(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
