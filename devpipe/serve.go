package devpipe

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Endpoints serves the local pipeline's HTTP API, what `eventpipe dev --serve` listens
// with: POST /publish/{pipeline} publishes the request body to the pipeline's topic (the
// query parameters are its attributes, the OrderingKeyHeader its ordering key) and
// answers {"messageId": …}, 404 for an unknown pipeline; GET /stats writes the live table of every subscription (published, applied,
// duplicate, stale, dead-lettered, retried, pending) and the handler's calls, or the rows
// as JSON with ?format=json.
func (e *Env) Endpoints() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /publish/{pipeline}", func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 10<<20))
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		attrs := map[string]string{}
		for k, v := range r.URL.Query() {
			attrs[k] = strings.Join(v, ",")
		}
		id, err := e.PublishOrdered(r.Context(), r.PathValue("pipeline"), data, attrs, r.Header.Get(OrderingKeyHeader))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"messageId": id})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		rows := e.Rows()
		if r.URL.Query().Get("format") == "json" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(rows)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_ = WriteLiveTable(w, rows)
		_ = e.WriteHandlerStats(w)
	})
	return mux
}

// WriteHandlerStats writes the team handler's call counts (nothing without a handler) and
// fails when a duplicate reached it.
func (e *Env) WriteHandlerStats(w io.Writer) error {
	if e.Handler == nil {
		return nil
	}
	stats := e.Handler.Stats()
	if _, err := fmt.Fprintln(w, stats); err != nil {
		return err
	}
	return stats.Check()
}

// OrderingKeyHeader is the request header POST /publish/{pipeline} takes a message's
// ordering key from.
const OrderingKeyHeader = "Ordering-Key"

// Rows returns the live account of every subscription: Tally.Rows, counting
// also the messages other clients of the emulator published (eventpipe replay,
// gcloud), with what each dead-letter subscription holds now.
func (e *Env) Rows() []Row {
	for _, m := range e.fake.Server.Messages() {
		e.Tally.Published(m.Topic, m.ID)
	}
	held := e.DLQ.Held()
	rows := e.Tally.Rows(e.Topology)
	i := 0
	for _, p := range e.Topology.Pipelines {
		for _, s := range p.Subscriptions {
			rows[i].InDLQ = held[s.DLQSubscription]
			i++
		}
	}
	return rows
}
