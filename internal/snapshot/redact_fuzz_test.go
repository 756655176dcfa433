package snapshot

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

// The redactor reads whatever a snapshot holds (record --redact --snapshot re-records one):
// on any bytes it must not panic, a binary reply keeps its length, and a JSON document stays
// JSON.
func FuzzRedact(f *testing.F) {
	f.Add([]byte("6,1,0,-;vm: 0002:c903:00a1:b2c3 0x0002c90300a1b2c3 b8-ce-f6-a1-b2-c4 10.1.2.3 MT2231X12345\n"))
	f.Add([]byte(`{"hostname":"vm","d":"fe80:0000:0000:0000:bace:f6ff:fea1:b2c4 \"vm\""}`))
	f.Add([]byte("00:00:10:29:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:c3\n"))
	f.Add(nltest.DevDump([]nldev.Device{{Index: 1, Name: "mlx5_0", NodeGUID: 0x0002c90300a1b2c3}}))
	f.Add(dltest.Encoder{}.InfoReply(0x15, devlink.Info{Handle: devlink.PCI("0000:3b:00.0"), Serial: "MT2231X12345",
		Fixed: []devlink.Version{{Name: "board.serial_number", Value: "MT2231X55555"}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newRedactor()
		r.addHost("vm")
		r.addSerial("MT2231X12345", "SN0000000001")
		s := string(b)
		r.text(s, textMode{hosts: true, route: true})
		if out := r.text(s, textMode{binary: true}); len(out) != len(s) {
			t.Fatalf("binary text changed length: %d to %d", len(s), len(out))
		}
		if j := rewriteJSONStrings(b, func(s string) string { return r.text(s, textMode{hosts: true}) }); json.Valid(b) && !json.Valid(j) {
			t.Fatalf("JSON %q became %q", b, j)
		}
		for _, rewrite := range []func([]byte){r.devlinkReply, r.nldevReply, func(b []byte) { r.replyBytes(b, map[string]string{}) }} {
			c := bytes.Clone(b)
			rewrite(c)
			if len(c) != len(b) {
				t.Fatal("a reply changed length")
			}
		}
	})
}
