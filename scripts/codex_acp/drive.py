"""Drives a zeroclaw daemon over its socket: initialize, session/new on the `codex` agent, one
prompt; every approval_request is answered allow_once. Usage: drive.py SOCKET SESSION PROMPT"""
import json, socket, sys
sock = socket.socket(socket.AF_UNIX); sock.connect(sys.argv[1]); f = sock.makefile('rwb')
n = 0
def send(method, params):
    global n; n += 1
    f.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n").encode()); f.flush(); return n
def until(i):
    while True:
        m = json.loads(f.readline())
        p = m.get('params') or {}
        if m.get('method') == 'session/update' and p.get('type') == 'approval_request':
            print('<- approval_request', json.dumps(p)[:300])
            n2 = send("session/approve", {"session_id": sys.argv[2], "request_id": p.get('requestId') or p.get('request_id'), "decision": "allow_once"})
            continue
        print('<-', json.dumps(m)[:260])
        if m.get('id') == i and 'method' not in m: return m
until(send("initialize", {"protocolVersion": 1, "clientInfo": {"name": "drive", "version": "0"}}))
until(send("session/new", {"agent_alias": "codex", "session_id": sys.argv[2], "chat_mode": "acp"}))
until(send("session/prompt", {"session_id": sys.argv[2], "prompt": sys.argv[3]}))
