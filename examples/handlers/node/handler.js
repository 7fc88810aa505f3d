#!/usr/bin/env node
// An order service behind eventpipe's idempotency gateway (Node, no dependencies).
//
// The eventpipe consumer runs beside this container and is the only way in:
//
//   * Pub/Sub order events arrive as POST /eventpipe/deliveries/<route>, once per
//     logical event, with an Idempotency-Key header (docs/handlers.md). Answer 2xx
//     when done, 4xx when the event can never be handled (poison), 5xx to retry.
//   * API requests (POST /orders) are proxied by the consumer; a POST carrying an
//     Idempotency-Key reaches this code at most once per key while the key lives.
//
// The one edge eventpipe cannot close for you: if the consumer dies after this
// handler answered but before it recorded the answer, the same Idempotency-Key
// comes again. So the effect below is applied once per key (a real service keeps
// `applied` in its own database, in the transaction of the effect).
//
// GET /stats reports the calls received, for the end-to-end tests. Two demo
// knobs in an order event exist for those tests: "sleepMs" (a long call) and
// "hangAttempts" (hang on the first N attempts).
'use strict';

const http = require('node:http');
const crypto = require('node:crypto');

const calls = { deliveries: [], api: [], callbacks: [] }; // every call, in arrival order
const applied = new Map(); // Idempotency-Key -> the effect's result (the dedupe a service keeps)
let orders = 0;

// applyOnce runs effect() once per key and returns its (stored) result.
function applyOnce(key, effect) {
  if (!applied.has(key)) applied.set(key, effect());
  return applied.get(key);
}

function reply(res, status, body, headers = {}) {
  const data = Buffer.from(JSON.stringify(sortKeys(body)));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': data.length, ...headers });
  res.end(data);
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  return v;
}

function readJSON(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks)) : {});
      } catch (e) {
        reject(e);
      }
    });
    req.on('error', reject);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function delivery(req, res, key) {
  const d = await readJSON(req);
  const event = d.event || {};
  calls.deliveries.push({
    key, bodyKey: d.idempotencyKey, route: d.route, attempt: d.attempt, messageId: d.messageId,
    publishTime: d.publishTime, deliveryAttempt: d.deliveryAttempt, attributes: d.attributes,
    event, fields: d.fields, traceparent: req.headers.traceparent || '',
  });
  if ((d.attempt || 1) <= (event.hangAttempts || 0)) {
    await sleep(3600 * 1000); // a stuck call: the consumer cuts it at its bound (the route's leaseTTL)
  }
  if (event.sleepMs) await sleep(event.sleepMs);
  const orderId = (d.fields || {}).orderId; // the route's output fields
  if (!orderId) return reply(res, 422, { error: 'orderId is missing' }); // 4xx: poison, never retried
  reply(res, 200, applyOnce(key, () => ({ confirmed: orderId })));
}

async function callback(req, res, key) {
  const c = await readJSON(req);
  const cb = c.callback || {};
  calls.callbacks.push({ key, bodyKey: c.idempotencyKey, route: c.route, callback: cb, fields: c.fields });
  if (cb.reject) return reply(res, 400, { error: 'rejected' }); // 4xx: the callback is rejected for good
  reply(res, 200, applyOnce(key, () => ({ accepted: key })));
}

async function createOrder(req, res, key) {
  const body = await readJSON(req);
  calls.api.push({ key, body });
  if (body.sleepMs) await sleep(body.sleepMs);
  if (!body.sku) return reply(res, 400, { error: 'sku is required' });
  const create = () => {
    orders += 1;
    return {
      orderId: `ord-${orders}`, sku: body.sku, quantity: body.quantity ?? 1,
      createdAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), nonce: crypto.randomBytes(8).toString('hex'),
    };
  };
  const order = key ? applyOnce(key, create) : create();
  reply(res, 201, order, { Location: `/orders/${order.orderId}` });
}

const server = http.createServer(async (req, res) => {
  const key = req.headers['idempotency-key'] || '';
  try {
    if (req.method === 'GET' && req.url === '/healthz') return reply(res, 200, { status: 'ok' });
    if (req.method === 'GET' && req.url === '/stats') return reply(res, 200, calls);
    if (req.method === 'POST' && req.url.startsWith('/eventpipe/deliveries/')) return await delivery(req, res, key);
    if (req.method === 'POST' && req.url.startsWith('/eventpipe/callbacks/')) return await callback(req, res, key);
    if (req.method === 'POST' && req.url === '/orders') return await createOrder(req, res, key);
    reply(res, 404, { error: 'no such path' });
  } catch (e) {
    reply(res, 400, { error: String(e) });
  }
});
server.keepAliveTimeout = 65 * 1000; // longer than the consumer's idle connections
// Beside the consumer the component sets HANDLER_PORT (Cloud Run keeps PORT for the ingress container).
server.listen(Number(process.env.HANDLER_PORT || process.env.PORT || 8081));
