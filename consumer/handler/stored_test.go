package handler

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// FuzzStoredResponse: any answer, stored (StoredResponse) as a store keeps
// it (store.CopyFields, the documents' value model) and written back
// (WriteStored), is the answer again: its status, its stored headers and
// nothing else, and its body byte for byte when it is at most the bound;
// over the bound, no body and Idempotent-Body-Omitted. Replays carry
// Idempotent-Replayed, first answers do not. The Idempotency-Key API and
// callbacks to the handler both answer through this pair.
func FuzzStoredResponse(f *testing.F) {
	f.Add(200, "application/json", `"e-1"`, "1", []byte(`{"ok":true}`), 64, true)
	f.Add(422, "", "", "", []byte{}, 0, false)
	f.Add(201, "text/plain; charset=utf-8", "", "x", bytes.Repeat([]byte{0xff}, 65), 64, true)
	f.Add(404, "application/problem+json", `W/"x"`, "", []byte("\x00\x01binary"), 8, false)
	f.Fuzz(func(t *testing.T, status int, contentType, etag, other string, body []byte, maxBody int, replayed bool) {
		status = 200 + (status%400+400)%400 // 200..599: what the handler may answer
		maxBody = (maxBody%256 + 256) % 256
		hdr := http.Header{}
		for name, v := range map[string]string{"Content-Type": contentType, "Etag": etag, "X-Not-Stored": other} {
			if v != "" && !strings.ContainsAny(v, "\r\n\x00") && strings.TrimSpace(v) == v {
				hdr.Set(name, v)
			}
		}
		kept, err := store.CopyFields(StoredResponse(status, hdr, body, maxBody))
		if err != nil {
			t.Fatalf("a store cannot keep the stored response: %v", err)
		}
		w := httptest.NewRecorder()
		if got := WriteStored(w, kept, replayed); got != status || w.Code != status {
			t.Fatalf("status %d (written %d), want %d", got, w.Code, status)
		}
		if len(body) <= maxBody {
			if !bytes.Equal(w.Body.Bytes(), body) || w.Header().Get(BodyOmittedHeader) != "" {
				t.Fatalf("body %q (omitted %q), want %q", w.Body.Bytes(), w.Header().Get(BodyOmittedHeader), body)
			}
		} else if w.Body.Len() != 0 || w.Header().Get(BodyOmittedHeader) != "true" {
			t.Fatalf("a %d-byte body over the %d-byte bound: got %q, omitted %q", len(body), maxBody, w.Body.Bytes(), w.Header().Get(BodyOmittedHeader))
		}
		for _, name := range []string{"Content-Type", "Etag"} {
			if got, want := w.Header().Get(name), hdr.Get(name); got != want {
				t.Fatalf("%s %q, want %q", name, got, want)
			}
		}
		if w.Header().Get("X-Not-Stored") != "" {
			t.Fatal("a header that is not stored was written")
		}
		if (w.Header().Get(ReplayedHeader) == "true") != replayed {
			t.Fatalf("%s %q, replayed %v", ReplayedHeader, w.Header().Get(ReplayedHeader), replayed)
		}
	})
}
