package envelope

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// refEnvelope and refMessage are the envelope's members as encoding/json
// finds struct fields (how DecodePush read them before it had its own
// scanner): the reference envelopeMembers and messageMembers must match.
type refEnvelope struct {
	Message         json.RawMessage `json:"message"`
	Subscription    json.RawMessage `json:"subscription"`
	DeliveryAttempt json.RawMessage `json:"deliveryAttempt"`
}

type refMessage struct {
	Data             json.RawMessage `json:"data"`
	Attributes       json.RawMessage `json:"attributes"`
	MessageID        json.RawMessage `json:"messageId"`
	MessageIDSnake   json.RawMessage `json:"message_id"`
	PublishTime      json.RawMessage `json:"publishTime"`
	PublishTimeSnake json.RawMessage `json:"publish_time"`
	OrderingKey      json.RawMessage `json:"orderingKey"`
}

// checkMembersAgainstEncodingJSON is the invariant of the envelope's
// scanner, for any valid JSON object: each member it finds is the text
// encoding/json gives the struct field of that name (case folded, escapes
// decoded, the last of a name given twice), for the body and for its
// message.
func checkMembersAgainstEncodingJSON(t *testing.T, body []byte) {
	t.Helper()
	if !json.Valid(body) || !isObject(body) {
		return
	}
	var ref refEnvelope
	if err := json.Unmarshal(body, &ref); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	env := envelopeMembers(body)
	for _, f := range []struct {
		name      string
		got, want []byte
	}{{"message", env.Message, ref.Message}, {"subscription", env.Subscription, ref.Subscription},
		{"deliveryAttempt", env.DeliveryAttempt, ref.DeliveryAttempt}} {
		if !bytes.Equal(f.got, f.want) || (f.got == nil) != (f.want == nil) {
			t.Fatalf("body %q: %s = %q, encoding/json finds %q", body, f.name, f.got, f.want)
		}
	}
	if len(env.Message) == 0 || env.Message[0] != '{' {
		return
	}
	var refMsg refMessage
	if err := json.Unmarshal(env.Message, &refMsg); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	raw := messageMembers(env.Message)
	for _, f := range []struct {
		name      string
		got, want []byte
	}{{"data", raw.Data, refMsg.Data}, {"attributes", raw.Attributes, refMsg.Attributes},
		{"messageId", raw.MessageID, refMsg.MessageID}, {"message_id", raw.MessageIDSnake, refMsg.MessageIDSnake},
		{"publishTime", raw.PublishTime, refMsg.PublishTime}, {"publish_time", raw.PublishTimeSnake, refMsg.PublishTimeSnake},
		{"orderingKey", raw.OrderingKey, refMsg.OrderingKey}} {
		if !bytes.Equal(f.got, f.want) || (f.got == nil) != (f.want == nil) {
			t.Fatalf("message %q: %s = %q, encoding/json finds %q", env.Message, f.name, f.got, f.want)
		}
	}
}

// genEnvelope writes a random push body: an object whose members are
// drawn from the names below (given twice now and then), the message among
// them an object of the same kind, values of every JSON kind.
func genEnvelope(r *rand.Rand, depth int) string {
	// Each field's spelling, its case variants, escaped spellings, the
	// Unicode letters that fold to ASCII ones (U+212A KELVIN SIGN to k,
	// U+017F LONG S to s), names that fold to none, invalid UTF-8.
	envelopeNames := []string{
		`"message"`, `"Message"`, `"MESSAGE"`, `"me\u0073sage"`, `"meſſage"`, `"messages"`, `"subscription"`,
		`"SubScription"`, `"deliveryAttempt"`, `"deliveryattempt"`, `"delivery_attempt"`, `"data"`, `"DATA"`,
		`"attributes"`, `"messageId"`, `"messageID"`, `"message_id"`, `"Message_Id"`, `"publishTime"`,
		`"publish_time"`, `"PUBLISH_TIME"`, `"orderingKey"`, `"orderingKey"`, `"ordering\u004bey"`,
		"\"ordering\u212aey\"", "\"data\xff\"", `""`, `"x"`,
	}
	var b strings.Builder
	b.WriteString([]string{"{", " {\n"}[r.IntN(2)])
	for i, n := 0, r.IntN(7); i < n; i++ {
		if i > 0 {
			b.WriteString([]string{",", " ,\t"}[r.IntN(2)])
		}
		b.WriteString(envelopeNames[r.IntN(len(envelopeNames))])
		b.WriteString([]string{":", " : "}[r.IntN(2)])
		switch k := r.IntN(8); {
		case k < 3 && depth < 2:
			b.WriteString(genEnvelope(r, depth+1))
		case k < 5:
			b.WriteString([]string{`"e30="`, `"projects/p/subscriptions/s"`, `"esc\"aped"`, `""`, `"2026-01-02T03:04:05Z"`}[r.IntN(5)])
		default:
			b.WriteString([]string{`null`, `2`, `-1.5`, `true`, `[1,{"message":{}}]`, `{}`}[r.IntN(6)])
		}
	}
	b.WriteString([]string{"}", "} \n"}[r.IntN(2)])
	return b.String()
}

// TestEnvelopeMembersMatchEncodingJSON checks the invariant on generated
// envelopes.
func TestEnvelopeMembersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 2))
	for range 5000 {
		checkMembersAgainstEncodingJSON(t, []byte(genEnvelope(r, 0)))
	}
}

// FuzzEnvelopeMembers checks the invariant on any text.
func FuzzEnvelopeMembers(f *testing.F) {
	f.Add([]byte(`{"message":{"data":"e30=","messageId":"1","publishTime":"2026-01-01T00:00:00Z"},"subscription":"projects/p/subscriptions/s"}`))
	// Case folding and the last of a name given twice, as encoding/json.
	f.Add([]byte(`{"MESSAGE":{"DATA":"a","data":"b","me\u0073sageid":"1"},"message":{"meſſageId":"2"},"sub\u0073cription":1}`))
	f.Add([]byte("{\"ordering\u212aey\":1,\"message\":{\"ordering\u212aey\":\"k\",\"data\xff\":2}}"))
	f.Fuzz(checkMembersAgainstEncodingJSON)
}
