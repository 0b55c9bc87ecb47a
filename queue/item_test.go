package queue_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/queue"
)

func TestItem_MarshalJSON_OriginalBytes(t *testing.T) {
	it := queue.Item{Host: "example.com", TS: 1705312200}
	if got, want := string(it.Encode()), `{"host":"example.com","ts":1705312200,"attempt":0}`; got != want {
		t.Errorf("Encode() = %s, want %s", got, want)
	}
	it.Attempt = 2
	it.Extra = []queue.Field{{Name: "z", Value: json.RawMessage(`{ "b" : [1, 2] }`)}, {Name: "a<&>", Value: json.RawMessage(`"<&>"`)}}
	want := `{"host":"example.com","ts":1705312200,"attempt":2,"z":{"b":[1,2]},"a<&>":"<&>"}`
	if got := string(it.Encode()); got != want {
		t.Errorf("Encode() with extra fields = %s, want %s (order kept, compacted, no HTML escaping)", got, want)
	}
	if _, err := (queue.Item{Host: "a.com", Extra: []queue.Field{{Name: "x", Value: json.RawMessage(`{`)}}}).MarshalJSON(); err == nil {
		t.Error("MarshalJSON() with an invalid extra value = nil error, want an error")
	}
}

func TestDecodeItem(t *testing.T) {
	tests := []struct {
		name, in string
		want     queue.Item
		err      string // substring; "" means success
	}{
		{"canonical", `{"host":"a.com","ts":1,"attempt":0}`, queue.Item{Host: "a.com", TS: 1}, ""},
		{"spacing", ` { "host" : "a.com" , "ts" : 1 , "attempt" : 2 } `, queue.Item{Host: "a.com", TS: 1, Attempt: 2}, ""},
		{"member order", `{"attempt":1,"ts":5,"host":"a.com"}`, queue.Item{Host: "a.com", TS: 5, Attempt: 1}, ""},
		{"only host", `{"host":"a.com"}`, queue.Item{Host: "a.com"}, ""},
		{"host normalised", `{"host":"Example.COM.","ts":1,"attempt":0}`, queue.Item{Host: "example.com", TS: 1}, ""},
		{"escaped host", `{"host":"b\u00fccher.de","ts":1,"attempt":0}`, queue.Item{Host: "xn--bcher-kva.de", TS: 1}, ""},
		{"negative ts", `{"host":"a.com","ts":-5,"attempt":0}`, queue.Item{Host: "a.com", TS: -5}, ""},
		{"unknown fields kept in order", `{"x":1,"host":"a.com","ts":1,"attempt":0,"a":{"b":2}}`,
			queue.Item{Host: "a.com", TS: 1, Extra: []queue.Field{{Name: "x", Value: json.RawMessage(`1`)}, {Name: "a", Value: json.RawMessage(`{"b":2}`)}}}, ""},
		{"duplicate unknown field, last wins", `{"host":"a.com","x":1,"x":2}`,
			queue.Item{Host: "a.com", Extra: []queue.Field{{Name: "x", Value: json.RawMessage(`2`)}}}, ""},

		{"not JSON", `not json`, queue.Item{}, "not a JSON object"},
		{"array", `["a.com"]`, queue.Item{}, "not a JSON object"},
		{"null", `null`, queue.Item{}, "null"},
		{"empty object", `{}`, queue.Item{}, `no "host"`},
		{"host not a string", `{"host":5}`, queue.Item{}, `"host" must be`},
		{"empty host", `{"host":""}`, queue.Item{}, `"host" must be`},
		{"ts float", `{"host":"a.com","ts":1.5}`, queue.Item{}, `"ts" must be`},
		{"ts string", `{"host":"a.com","ts":"1"}`, queue.Item{}, `"ts" must be`},
		{"attempt negative", `{"host":"a.com","attempt":-1}`, queue.Item{}, `"attempt" must be`},
		{"attempt huge", `{"host":"a.com","attempt":99999999999}`, queue.Item{}, `"attempt" must be`},
		{"invalid host", `{"host":"a..com","ts":1,"attempt":0}`, queue.Item{}, "empty label"},
		{"IP host", `{"host":"10.0.0.1","ts":1,"attempt":0}`, queue.Item{}, "IP address"},
		{"truncated", `{"host":"a.com","ts":1,"attempt":0`, queue.Item{}, "not a JSON object"},
		{"trailing garbage", `{"host":"a.com","ts":1,"attempt":0}x`, queue.Item{}, "not a JSON object"},
		{"leading zero", `{"host":"a.com","ts":01,"attempt":0}`, queue.Item{}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := queue.DecodeItem([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("DecodeItem(%s) error = %v, want one containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeItem(%s) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeItem(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func ExampleDecodeItem() {
	it, err := queue.DecodeItem([]byte(`{"host":"Example.COM","ts":1705312200,"attempt":1,"via":"mx"}`))
	if err != nil {
		panic(err)
	}
	it.Attempt++
	fmt.Println(string(it.Encode()))
	// Output: {"host":"example.com","ts":1705312200,"attempt":2,"via":"mx"}
}
