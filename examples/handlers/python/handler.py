#!/usr/bin/env python3
"""An order service behind eventpipe's idempotency gateway (standard library only).

The eventpipe consumer runs beside this container and is the only way in:

  * Pub/Sub order events arrive as POST /eventpipe/deliveries/<route>, once per
    logical event, with an Idempotency-Key header (docs/handlers.md). Answer 2xx
    when done, 4xx when the event can never be handled (poison), 5xx to retry.
  * API requests (POST /orders) are proxied by the consumer; a POST carrying an
    Idempotency-Key reaches this code at most once per key while the key lives.

The one edge eventpipe cannot close for you: if the consumer dies after this
handler answered but before it recorded the answer, the same Idempotency-Key
comes again. So the effect below is applied once per key (a real service keeps
`applied` in its own database, in the transaction of the effect).

GET /stats reports the calls received, for the end-to-end tests. Two demo
knobs in an order event exist for those tests: "sleepMs" (a long call) and
"hangAttempts" (hang on the first N attempts).
"""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
calls = {"deliveries": [], "api": [], "callbacks": []}  # every call, in arrival order
applied = {}  # Idempotency-Key -> the effect's result (the dedupe a service keeps)
orders = 0


def apply_once(key, effect):
    """Runs effect() once per key and returns its (stored) result."""
    with lock:
        if key in applied:
            return applied[key]
    result = effect()
    with lock:
        return applied.setdefault(key, result)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the consumer reuses connections

    def log_message(self, fmt, *args):  # the consumer logs every request already
        pass

    def reply(self, status, body, headers=None):
        data = json.dumps(body, sort_keys=True).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def read_json(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self):
        if self.path == "/healthz":
            return self.reply(200, {"status": "ok"})
        if self.path == "/stats":
            with lock:
                return self.reply(200, calls)
        self.reply(404, {"error": "no such path"})

    def do_POST(self):
        key = self.headers.get("Idempotency-Key", "")
        if self.path.startswith("/eventpipe/deliveries/"):
            return self.delivery(key)
        if self.path.startswith("/eventpipe/callbacks/"):
            return self.callback(key)
        if self.path == "/orders":
            return self.create_order(key)
        self.reply(404, {"error": "no such path"})

    def delivery(self, key):
        d = self.read_json()
        event = d.get("event") or {}
        with lock:
            calls["deliveries"].append({
                "key": key, "bodyKey": d.get("idempotencyKey"), "route": d.get("route"),
                "attempt": d.get("attempt"), "messageId": d.get("messageId"),
                "publishTime": d.get("publishTime"), "deliveryAttempt": d.get("deliveryAttempt"),
                "attributes": d.get("attributes"), "event": event, "fields": d.get("fields"),
                "traceparent": self.headers.get("traceparent", ""),
            })
        if d.get("attempt", 1) <= event.get("hangAttempts", 0):
            time.sleep(3600)  # a stuck call: the consumer cuts it at its bound (the route's leaseTTL)
        if event.get("sleepMs"):
            time.sleep(event["sleepMs"] / 1000)
        order_id = (d.get("fields") or {}).get("orderId")  # the route's output fields
        if not order_id:
            return self.reply(422, {"error": "orderId is missing"})  # 4xx: poison, never retried
        result = apply_once(key, lambda: {"confirmed": order_id})
        self.reply(200, result)

    def callback(self, key):
        c = self.read_json()
        cb = c.get("callback") or {}
        with lock:
            calls["callbacks"].append({"key": key, "bodyKey": c.get("idempotencyKey"), "route": c.get("route"),
                                       "callback": cb, "fields": c.get("fields")})
        if cb.get("reject"):
            return self.reply(400, {"error": "rejected"})  # 4xx: the callback is rejected for good
        self.reply(200, apply_once(key, lambda: {"accepted": key}))

    def create_order(self, key):
        req = self.read_json()
        with lock:
            calls["api"].append({"key": key, "body": req})
        if req.get("sleepMs"):
            time.sleep(req["sleepMs"] / 1000)
        if not req.get("sku"):
            return self.reply(400, {"error": "sku is required"})

        def create():
            global orders
            with lock:
                orders += 1
                n = orders
            return {"orderId": "ord-%d" % n, "sku": req["sku"], "quantity": req.get("quantity", 1),
                    "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "nonce": os.urandom(8).hex()}

        order = apply_once(key, create) if key else create()
        self.reply(201, order, {"Location": "/orders/" + order["orderId"]})


if __name__ == "__main__":
    # Beside the consumer the component sets HANDLER_PORT (Cloud Run keeps PORT for the ingress container).
    port = int(os.environ.get("HANDLER_PORT") or os.environ.get("PORT") or "8081")
    ThreadingHTTPServer(("", port), Handler).serve_forever()
