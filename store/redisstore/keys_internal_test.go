package redisstore

import (
	"reflect"
	"testing"
)

func TestKeys_ShareHashTag(t *testing.T) {
	for _, base := range []string{"{spyder}:queue", "prod:{q1}:queue"} {
		k := newKeys(base)
		want := hashTag(base)
		v := reflect.ValueOf(k)
		for i := range v.NumField() {
			key := v.Field(i).String()
			if got := hashTag(key); got != want {
				t.Errorf("newKeys(%q).%s = %q, hash tag %q, want %q", base, v.Type().Field(i).Name, key, got, want)
			}
		}
		for _, key := range newKeys(base + ":load-0123").state() {
			if got := hashTag(key); got != want {
				t.Errorf("staging key %q hash tag %q, want %q", key, got, want)
			}
		}
	}
}

func TestKeys_OriginalNames(t *testing.T) {
	k := newKeys("spyder:queue")
	got := []string{k.pending, k.legacy, k.dead, k.hostsMeta}
	want := []string{"spyder:queue", "spyder:queue:processing", "spyder:queue:dead", "spyder:queue:hosts#meta"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("newKeys(spyder:queue) = %v, want %v", got, want)
	}
}

func TestHashTag(t *testing.T) {
	for in, want := range map[string]string{
		"spyder:queue": "", "{spyder}:queue": "spyder", "a{b}c{d}": "b", "{}x": "", "a{b": "", "x{}{y}": "",
	} {
		if got := hashTag(in); got != want {
			t.Errorf("hashTag(%q) = %q, want %q", in, got, want)
		}
	}
}
