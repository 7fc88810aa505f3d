package pushload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// BareHTTPName is the bare HTTP endpoint's contender name.
const BareHTTPName = "bare-http"

// maxPushBytes bounds a push body the bare HTTP endpoint reads (Pub/Sub's
// largest message, 10 MB, base64-encoded, and the envelope).
const maxPushBytes = 14 << 20

// pushEnvelope is a Pub/Sub push request's body (the fields the bare HTTP
// endpoint reads); encoding/json decodes the base64 data into Data.
type pushEnvelope struct {
	Message struct {
		Data        []byte    `json:"data"`
		MessageID   string    `json:"messageId"`
		PublishTime time.Time `json:"publishTime"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

// BareHTTP is the smallest correct push endpoint a team would write with
// the standard library and pgx alone: the yardstick of what HTTP itself
// costs on top of the bare loop. POST /pubsub/push decodes the envelope
// and its base64 data with encoding/json, derives the document and the
// dedupe marker the bare loop writes, and applies them with the bare
// loop's one statement (bareApply); it answers 200 once applied or found
// a duplicate or stale, 400 for a body it cannot read (Pub/Sub sends such
// a message to its dead-letter topic rather than retrying it for ever) and
// 500 when the database fails (Pub/Sub retries). GET /healthz answers 200.
// It logs nothing per message. Command barehttp serves it as its own
// process, the way the consumer runs.
func BareHTTP(b *Bare) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /pubsub/push", func(w http.ResponseWriter, r *http.Request) {
		m, err := decodePush(http.MaxBytesReader(w, r.Body, maxPushBytes))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := b.Send(r.Context(), m); err != nil {
			http.Error(w, "apply: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	return mux
}

// decodePush reads a push body into the bare loop's writes.
func decodePush(body io.Reader) (*Message, error) {
	var env pushEnvelope
	if err := json.NewDecoder(body).Decode(&env); err != nil {
		return nil, fmt.Errorf("push envelope: %w", err)
	}
	msg := env.Message
	if msg.MessageID == "" || msg.PublishTime.IsZero() {
		return nil, errors.New("push envelope: no messageId or publishTime")
	}
	var e event
	if err := json.Unmarshal(msg.Data, &e); err != nil {
		return nil, fmt.Errorf("message %s: data: %w", msg.MessageID, err)
	}
	if e.Service == "" || e.ProducedAt.IsZero() {
		return nil, fmt.Errorf("message %s: data: no service or producedAt", msg.MessageID)
	}
	m := &Message{}
	m.DocID, m.MarkerID, m.Doc, m.Marker = documents(e, msg.MessageID, msg.PublishTime)
	return m, nil
}
