// Package engine is eventpipe's idempotency engine: it turns at-least-once
// deliveries into exactly-once effects, written once against the minimal
// transactional document interface of package store, so it runs unchanged
// on every driver (memory, bbolt, PostgreSQL, Firestore).
//
// The calls, one per kind of effect:
//
//   - Materialize: latest-state materialisation in one transaction.
//     ModeLatest reads the target document, compares versions by the
//     one ordering guard (Ordering: sequence, event time and the window
//     of publish times) and writes or skips: Applied, Duplicate or Stale. It costs 1 read + 1 write when
//     applied and 1 read + 0 writes otherwise; Write.DedupeMarker adds a
//     {prefix}dedupe marker in the same transaction. ModeCreate creates one
//     document per event. Concurrent ModeLatest deliveries for one document
//     are coalesced, like a group commit: while its transaction is in
//     flight the others wait (Config.MaxWaitingPerDocument), and the next
//     transaction decides them all, writing only the newest event.
//   - Claim, Extend, Settle, Release: the one reservation behind every
//     effect outside the store that must happen once per key (a Pub/Sub
//     event's handler call or action, a callback, an API request's
//     Idempotency-Key): pending with an expiry (its length per request),
//     extended while the effect runs, then completed or rejected (every
//     later claim replays the stored result) or released (the next claim
//     is the next attempt); fencing tokens stop a holder that was taken
//     over; an event's attempts are bounded (then it is poison, with an
//     audit record); an event with an aggregate and sequence passes the
//     same ordering guard (Ordering) as a latest-state document.
//   - RecordPoison: the audit record of a message given up on.
//
// Every error is an *Error whose Type tells the caller what to do
// (duplicate, stale, in_progress, poison, transient, configuration) and whose
// Code keeps the store's own code (gRPC code name or SQLSTATE). Every record
// in the dedupe, leases, receipts and poison collections carries expireAt
// (Config.DedupeTTL, ReceiptTTL, PoisonTTL) for Firestore's TTL policy, and
// the engine treats an expired record as absent itself.
//
// Failpoints (Config.Failpoint, Engine.Hit) let tests crash a delivery at
// a worker's four points (after claim, before and after its action, before
// mark-done) and a projection's three;
// KillAtFailpoints(os.Getenv(FailpointEnv)) makes a process SIGKILL itself
// there.
package engine
