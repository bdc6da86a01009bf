#!/usr/bin/env python3
"""mock_controller.py: the controller's side of the agent protocol of
docs/api.md ("Agent protocol"), small enough to drive one agent's behaviour
from a test: register, heartbeat, level-triggered assignments long-poll with
versions, reports, sessions and 409 for stale ones. Nothing is scheduled
here: the test says what each node should run through /control routes.

    mock_controller.py PORT TOKEN

Control routes (no token):
    POST /control/assign   {"node": N, "tasks": [ASSIGNMENT, ...]}  bumps the version
    POST /control/expire   {"node": N}  the node's session becomes stale (409s)
    POST /control/kill     {"node": N, "kill": [{"task_id", "epoch", "reason"}]}  sent once
                           in the reply to the node's next heartbeat
    GET  /control/state    {"nodes": {N: {"session", "registers": [BODY...],
                            "reports": [REPORT...], "heartbeats": n, "last_heartbeat"}}}
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

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
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if u.path == "/control/state":
            with lock:
                self.reply(200, {"nodes": nodes})
            return
        if u.path == "/v1/agent/assignments":
            if not self.authed():
                return
            with lock:
                n = node(q["node"])
                if not self.session_ok(n, q["session"]):
                    self.error(409, "conflict", "stale session")
                    return
                wait = min(int(q.get("wait", 30)), 60)
                lock.wait_for(lambda: n["version"] > int(q["version"]) or
                              not self.session_ok(n, q["session"]), timeout=wait)
                if not self.session_ok(n, q["session"]):
                    self.error(409, "conflict", "stale session")
                    return
                self.reply(200, {"version": n["version"], "tasks": n["tasks"]})
            return
        self.error(404, "not_found", "no route " + u.path)

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
                n = node(b["name"])
                session_counter[0] += 1
                n["session"] = session_counter[0]
                n["registers"].append(b)
                lock.notify_all()
                self.reply(200, {"node": b["name"], "session": n["session"],
                                 "heartbeat_interval_s": 1, "heartbeat_timeout_s": 30,
                                 "pool": "default", "labels": b.get("labels", {})})
                return
            n = node(b.get("node", ""))
            if not self.session_ok(n, b.get("session", -1)):
                self.error(409, "conflict", "stale session")
                return
            if u.path == "/v1/agent/heartbeat":
                n["heartbeats"] += 1
                n["last_heartbeat"] = b
                kill, n["kill"] = n["kill"], []
                self.reply(200, {"kill": kill, "heartbeat_interval_s": 1})
                return
            if u.path == "/v1/agent/report":
                wanted = {(t["task_id"], t["epoch"]) for t in n["tasks"]}
                stale = []
                for r in b["reports"]:
                    n["reports"].append(r)
                    if (r["task_id"], r["epoch"]) not in wanted:
                        stale.append({"task_id": r["task_id"], "epoch": r["epoch"]})
                self.reply(200, {"stale": stale})
                return
        self.error(404, "not_found", "no route " + u.path)


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
