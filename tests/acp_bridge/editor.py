"""An editor, as far as ACP goes: the official Python SDK's client side
(`agent-client-protocol` on PyPI) launches `zeroclaw acp` over stdio and
plays one scenario of tests/it/acp_bridge.rs.

Usage: editor.py SCENARIO [ARG...]; the environment names the bridge
(ZC_BIN, ZC_CONFIG_DIR, ZC_AGENT). The scenario prints one JSON line per
observation (`{"k": ..., ...}`) on stdout for the Rust test to compare
exactly; a line `WAIT <tag>` asks the Rust test to act (kill the daemon,
...) and write one line back on stdin before the scenario goes on.

Every byte the bridge writes to its stdout is kept (a tee in front of the
SDK's reader) and checked at the end: each line must be a JSON-RPC 2.0
frame, nothing else (one stray byte breaks a real editor).
"""

import asyncio
import json
import os
import sys

import acp
from acp import schema as s


def emit(kind, **kw):
    print(json.dumps({"k": kind, **kw}, sort_keys=True), flush=True)


async def wait_for_test(tag):
    print(f"WAIT {tag}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def brief(update):
    """An update as the test compares it: its kind and what matters."""
    u = update.model_dump(by_alias=True, exclude_none=True)
    kind = u.get("sessionUpdate")
    if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
        return [kind, u["content"].get("text")]
    if kind == "tool_call":
        return [kind, u["toolCallId"], u.get("title"), u.get("status"), u.get("rawInput")]
    if kind == "tool_call_update":
        return [kind, u["toolCallId"], u.get("status"), u.get("rawOutput")]
    return [kind, {k: v for k, v in u.items() if k != "sessionUpdate"}]


class Editor:
    """The client side: collects updates, answers permissions per `policy`."""

    def __init__(self, name, policy="allow_once"):
        self.name = name
        self.policy = policy
        self.updates = []
        self.permissions = []
        self.first_chunk = asyncio.Event()
        self.questions = []

    async def session_update(self, session_id, update, **kw):
        self.updates.append(brief(update))
        if getattr(update, "session_update", None) == "agent_message_chunk":
            self.first_chunk.set()

    async def request_permission(self, options, session_id, tool_call, **kw):
        self.permissions.append(
            {"tool": tool_call.title, "toolCallId": tool_call.tool_call_id,
             "options": [[o.option_id, o.kind] for o in options]})
        if self.policy == "cancel":
            return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))
        return s.RequestPermissionResponse(
            outcome=s.AllowedOutcome(outcome="selected", option_id=self.policy))

    async def create_elicitation(self, message, mode, **kw):
        self.questions.append(message)
        return s.AcceptElicitationResponse(action="accept", content={"answer": "yes"})

    def take(self):
        u, self.updates = self.updates, []
        return u


class Bridge:
    """`zeroclaw acp` as a child process, its stdout teed."""

    async def start(self, editor, *extra):
        env = dict(os.environ)
        args = ["--config-dir", env["ZC_CONFIG_DIR"], "acp"]
        if env.get("ZC_AGENT"):
            args += ["--agent", env["ZC_AGENT"]]
        self.proc = await asyncio.create_subprocess_exec(
            env["ZC_BIN"], *args, *extra,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env,
            limit=64 * 1024 * 1024)
        self.raw = bytearray()
        self.reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        self.tee = asyncio.create_task(self._tee())
        self.editor = editor
        self.conn = acp.connect_to_agent(editor, self.proc.stdin, self.reader, use_unstable_protocol=True)
        return self.conn

    async def _tee(self):
        while True:
            b = await self.proc.stdout.read(65536)
            if not b:
                self.reader.feed_eof()
                return
            self.raw += b
            self.reader.feed_data(b)

    async def initialize(self, elicitation=False):
        caps = s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)
        if elicitation:
            caps.elicitation = s.ElicitationCapabilities(form=s.ElicitationFormCapabilities())
        r = await self.conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=caps)
        return r

    def check_stdout(self):
        """Every line a JSON-RPC 2.0 frame; (ok, lines)."""
        text = bytes(self.raw)
        lines = text.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        else:
            return False, len(lines)
        for line in lines:
            try:
                m = json.loads(line)
            except ValueError:
                return False, len(lines)
            if not isinstance(m, dict) or m.get("jsonrpc") != "2.0":
                return False, len(lines)
        return True, len(lines)

    async def kill(self):
        self.proc.kill()
        await self.proc.wait()

    async def close(self):
        """Closes stdin as an editor does when it quits; reports stdout."""
        self.proc.stdin.close()
        code = await asyncio.wait_for(self.proc.wait(), 15)
        await self.tee
        ok, n = self.check_stdout()
        emit("stdout", editor=self.editor.name, only_frames=ok, exit=code, frames=n > 0)


def text(t):
    return [acp.text_block(t)]


async def prompt(conn, sid, t):
    try:
        r = await conn.prompt(session_id=sid, prompt=text(t))
        return r.stop_reason
    except acp.RequestError as e:
        return {"error": e.code, "message": str(e)}
    except ConnectionError:
        return {"error": "connection closed"}


async def scenario_basic():
    """initialize, new, a streamed turn (thought, tool call), list."""
    a = Editor("a")
    b = Bridge()
    conn = await b.start(a)
    init = await b.initialize()
    emit("init", result=init.model_dump(by_alias=True, exclude_none=True))
    new = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
    sid = new.session_id
    emit("new", session=sid)
    stop = await prompt(conn, sid, 'Hello\n::think hm\n::tool echo {"text":"x"}\nBye')
    emit("turn", stop=stop, updates=a.take())
    lst = await conn.list_sessions()
    emit("list", sessions=[[x.session_id, x.title] for x in lst.sessions])
    await b.close()


async def scenario_permission():
    """approval_request -> session/request_permission -> session/approve."""
    a = Editor("a", policy="allow_once")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
    stop = await prompt(conn, sid, '::approve write_file {"path":"a"}')
    emit("allowed", stop=stop, updates=a.take(), permissions=a.permissions)
    a.policy, a.permissions = "reject", []
    stop = await prompt(conn, sid, '::approve rm {"path":"b"}')
    emit("rejected", stop=stop, updates=a.take(), permissions=a.permissions)
    a.policy, a.permissions = "cancel", []
    stop = await prompt(conn, sid, '::approve rm {"path":"c"}')
    emit("cancelled", stop=stop, updates=a.take())
    await b.close()


async def scenario_ask():
    """The daemon's question: forwarded to an editor that answers forms,
    refused at once (unavailable) for one that does not."""
    for name, form in (("form", True), ("plain", False)):
        a = Editor(name)
        b = Bridge()
        conn = await b.start(a)
        await b.initialize(elicitation=form)
        sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
        stop = await prompt(conn, sid, "::ask Continue?")
        emit("ask", editor=name, stop=stop, questions=a.questions, updates=a.take())
        await b.close()


async def scenario_cancel():
    """session/cancel mid-turn: stopReason cancelled, the partial text kept."""
    a = Editor("a")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
    turn = asyncio.create_task(prompt(conn, sid, "::delay 100\n::chunk 1\nabcdefghijklmnopqrstuvwxyz"))
    await asyncio.wait_for(a.first_chunk.wait(), 20)
    await conn.cancel(session_id=sid)
    stop = await asyncio.wait_for(turn, 20)
    seen = "".join(u[1] for u in a.take() if u[0] == "agent_message_chunk")
    emit("cancel", stop=stop, partial=0 < len(seen) < 26)
    # The same session goes on.
    stop = await prompt(conn, sid, "after")
    emit("after", stop=stop, updates=a.take())
    await b.close()


async def scenario_load(sid):
    """A second editor loads a session: the replay, then the answer."""
    a = Editor("loader")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    r = await conn.load_session(cwd=os.getcwd(), session_id=sid, mcp_servers=[])
    emit("load", updates=a.take(), result=r.model_dump(by_alias=True, exclude_none=True) if r else None)
    stop = await prompt(conn, sid, "again")
    emit("again", stop=stop, updates=a.take())
    await b.close()


async def scenario_load_twice(sid):
    """Two loads in a row on one bridge: each replays the transcript once."""
    a = Editor("loader")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    for n in (1, 2):
        await conn.load_session(cwd=os.getcwd(), session_id=sid, mcp_servers=[])
        emit("load", n=n, updates=a.take())
    try:
        await conn.load_session(cwd=os.getcwd(), session_id="no-such-session", mcp_servers=[])
        emit("missing", error=None)
    except acp.RequestError as e:
        emit("missing", error=e.code)
    await b.close()


async def scenario_prepare():
    """One session with two turns, its id printed (for load)."""
    a = Editor("a")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
    await prompt(conn, sid, "first prompt\nsecond line")
    await prompt(conn, sid, '::tool echo {"text":"x"}\ndone')
    emit("prepared", session=sid)
    await b.close()


async def scenario_editor_killed():
    """The editor dies mid-turn; the turn goes on in the daemon."""
    a = Editor("a")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
    asyncio.create_task(prompt(conn, sid, "::delay 50\n::chunk 1\n0123456789"))
    await asyncio.wait_for(a.first_chunk.wait(), 20)
    await b.kill()
    emit("killed", session=sid)


async def scenario_daemon_killed():
    """The daemon dies mid-turn: the prompt fails clearly, the bridge
    reconnects, and load shows the saved part and the marker once."""
    a = Editor("a")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
    turn = asyncio.create_task(prompt(conn, sid, "::delay 100\n::chunk 1\n0123456789"))
    await asyncio.wait_for(a.first_chunk.wait(), 20)
    await wait_for_test("kill")
    failed = await asyncio.wait_for(turn, 20)
    seen = "".join(u[1] for u in a.take() if u[0] == "agent_message_chunk")
    emit("failed", result=failed, seen=seen)
    await wait_for_test("restarted")
    for n in (1, 2):
        await conn.load_session(cwd=os.getcwd(), session_id=sid, mcp_servers=[])
        emit("load", n=n, updates=a.take())
    stop = await prompt(conn, sid, "still here")
    emit("again", stop=stop)
    await b.close()


async def scenario_two_editors():
    """Two editors on one session see the same stream."""
    a, c = Editor("a"), Editor("c")
    ba, bc = Bridge(), Bridge()
    conn_a = await ba.start(a)
    conn_c = await bc.start(c)
    await ba.initialize()
    await bc.initialize()
    sid = (await conn_a.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
    await conn_c.load_session(cwd=os.getcwd(), session_id=sid, mcp_servers=[])
    stop = await prompt(conn_a, sid, 'one\n::tool echo {"n":1}\ntwo')
    # The watcher's stream may trail the prompter's answer by a frame or two.
    for _ in range(100):
        if len(c.updates) >= len(a.updates):
            break
        await asyncio.sleep(0.05)
    emit("streams", stop=stop, a=a.take(), c=c.take())
    await ba.close()
    await bc.close()


async def scenario_hosted():
    """editor -> bridge -> daemon -> hosted ACP agent (the test agent)."""
    a = Editor("a", policy="allow_once")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
    stop = await prompt(conn, sid, "say hello\nthink hmm\ntool t1 read Reading\nask e1\nplan")
    emit("hosted", stop=stop, updates=a.take(), permissions=a.permissions)
    await b.close()


async def scenario_resume_list(sid):
    """session/resume (no replay) and session/list with titles."""
    a = Editor("a")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    await conn.resume_session(cwd=os.getcwd(), session_id=sid)
    emit("resume", updates=a.take())
    lst = await conn.list_sessions()
    emit("list", sessions=[[x.session_id, x.title] for x in lst.sessions])
    await b.close()


async def scenario_too_large(size):
    """A prompt with an embedded file whose daemon frame is over the
    daemon's frame limit: answered at once, and the session goes on."""
    a = Editor("a")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
    big = acp.resource_block(acp.embedded_text_resource(
        "file:///w/big.txt", "x" * int(size), mime_type="text/plain"))
    started = asyncio.get_running_loop().time()
    try:
        r = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[acp.text_block("look"), big]), 30)
        emit("big", stop=r.stop_reason)
    except acp.RequestError as e:
        emit("big", error=e.code, message=str(e), data=e.data,
             seconds=asyncio.get_running_loop().time() - started)
    except asyncio.TimeoutError:
        emit("big", error="no answer in 30 s")
    stop = await prompt(conn, sid, "after")
    emit("after", stop=stop)
    await b.close()


async def scenario_new_fails():
    """session/new when the bridge cannot have a daemon: the editor's error."""
    a = Editor("a")
    b = Bridge()
    conn = await b.start(a)
    await b.initialize()
    try:
        r = await asyncio.wait_for(conn.new_session(cwd=os.getcwd(), mcp_servers=[]), 60)
        emit("new", session=r.session_id)
    except acp.RequestError as e:
        emit("new", error=e.code, message=str(e))
    except asyncio.TimeoutError:
        emit("new", error="no answer in 60 s")
    await b.close()


async def main():
    name, args = sys.argv[1], sys.argv[2:]
    await asyncio.wait_for(globals()[f"scenario_{name}"](*args), 120)


if __name__ == "__main__":
    asyncio.run(main())
