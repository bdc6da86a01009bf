#!/usr/bin/env python3
"""mock_controller.py: the controller's side of the agent protocol of
docs/api.md ("Agent protocol"; messages: include/drover/proto.h), small
enough to drive one agent's behaviour from a test: register, and the sync
exchange (health, task states and reports up; the level-triggered task set
down when its version changed, else after the wait), sessions and 409 for
stale ones. Nothing is scheduled here: the test says what each node should
run through /control routes.

    mock_controller.py PORT TOKEN

Control routes (no token):
    POST /control/assign   {"node": N, "tasks": [ASSIGNMENT, ...]}  bumps the version
    POST /control/expire   {"node": N}  the node's session becomes stale (409s)
    POST /control/kill     {"node": N, "kill": [{"task_id", "epoch", "reason"}]}  sent once,
                           as "stale", in the reply to the node's next sync
    GET  /control/state    {"nodes": {N: {"session", "registers": [BODY...],
                            "reports": [REPORT...], "heartbeats": n (syncs),
                            "last_heartbeat": the last sync}}}
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

PORT = int(sys.argv[1])
TOKEN = sys.argv[2]

lock = threading.Condition()
nodes = {}          # name -> dict
session_counter = [100]


def node(name):
    return nodes.setdefault(name, {"session": 0, "registers": [], "reports": [],
                                   "heartbeats": 0, "last_heartbeat": None,
                                   "tasks": [], "version": 0, "stale_session": None,
                                   "kill": []})


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, code, msg):
        self.reply(status, {"error": {"code": code, "message": msg, "details": []}})

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def authed(self):
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            self.error(401, "unauthorized", "bad token")
            return False
        return True

    def session_ok(self, n, session):
        return n["session"] and int(session) == n["session"]

    def do_GET(self):
        u = urlparse(self.path)
        if u.path == "/control/state":
            with lock:
                self.reply(200, {"nodes": nodes})
            return
        self.error(404, "not_found", "no route " + u.path)

    def sync(self, n, b):
        """Health, task states and reports up; the task set down."""
        session = b.get("session", -1)
        # an agent cuts a waiting sync short (it closes that connection) when it
        # has a report: the newest sync of a node is the one that gets its kills
        n["seq"] = my = n.get("seq", 0) + 1
        lock.notify_all()
        n["heartbeats"] += 1
        n["last_heartbeat"] = b
        wanted = {(t["task_id"], t["epoch"]) for t in n["tasks"]}
        stale = [{"task_id": r["task_id"], "epoch": r["epoch"], "reason": "stale epoch"}
                 for r in b.get("reports", []) if (r["task_id"], r["epoch"]) not in wanted]
        n["reports"] += b.get("reports", [])
        if not b.get("reports") and not stale:
            lock.wait_for(lambda: n["version"] != b["version"] or n["kill"] or n["seq"] != my or
                          not self.session_ok(n, session), timeout=min(b.get("wait_s", 1), 60))
        if not self.session_ok(n, session):
            self.error(409, "conflict", "stale session")
            return
        kill = []
        if n["seq"] == my:
            kill, n["kill"] = n["kill"], []
        # as a server with allow_root_tasks: true (the tests run as root)
        out = {"version": n["version"], "heartbeat_interval_s": 1, "allow_root_tasks": True,
               "stale": stale + kill}
        if n["version"] != b["version"]:
            out["tasks"] = n["tasks"]
        self.reply(200, out)

    def do_POST(self):
        u = urlparse(self.path)
        b = self.body()
        with lock:
            if u.path == "/control/assign":
                n = node(b["node"])
                n["tasks"] = b["tasks"]
                n["version"] += 1
                lock.notify_all()
                self.reply(200, {"version": n["version"]})
                return
            if u.path == "/control/kill":
                node(b["node"])["kill"] = b["kill"]
                lock.notify_all()
                self.reply(200, {})
                return
            if u.path == "/control/expire":
                n = node(b["node"])
                n["session"] = 0
                lock.notify_all()
                self.reply(200, {})
                return
            if not u.path.startswith("/v1/agent/"):
                self.error(404, "not_found", "no route " + u.path)
                return
            if not self.authed():
                return
            if u.path == "/v1/agent/register":
                if abs(b.get("protocol", 0) - 1) > 1:
                    self.error(409, "conflict", "protocol %r, mock speaks 1" % b.get("protocol"))
                    return
                n = node(b["name"])
                session_counter[0] += 1
                n["session"] = session_counter[0]
                n["registers"].append(b)
                lock.notify_all()
                self.reply(200, {"node": b["name"], "session": n["session"],
                                 "heartbeat_interval_s": 1, "heartbeat_timeout_s": 30,
                                 "allow_root_tasks": True, "pool": "default", "labels": b.get("labels", {})})
                return
            n = node(b.get("node", ""))
            if not self.session_ok(n, b.get("session", -1)):
                self.error(409, "conflict", "stale session")
                return
            if u.path == "/v1/agent/sync":
                self.sync(n, b)
                return
        self.error(404, "not_found", "no route " + u.path)


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
