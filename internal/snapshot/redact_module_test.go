package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
)

// A transceiver's serial number in a recorded module EEPROM page is replaced by a stand-in of the
// field's length, the same one wherever it appears; the check code is kept valid and every other
// byte is left as read.
func TestRedactModuleSerial(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, EthtoolNetlinkDir), 0o755)
	os.MkdirAll(filepath.Join(dir, RootDir), 0o755)
	const fam = 0x14
	// Upper page 00h views (offset 128-255) of an SFF-8636 QSFP28 and a CMIS QSFP-DD module.
	sff := make([]byte, 256)
	sff[128] = 0x11
	copy(sff[168:], "MCP1600-C003    ") // vendor PN stays
	copy(sff[196:], "MT1234FT05678   ")
	sff[223] = checkCode(sff[192:223])
	cmis := make([]byte, 256)
	cmis[128] = 0x18
	copy(cmis[148:], "MMS1W50-HM      ")
	copy(cmis[166:], "MT1234FT05678   ") // the same serial: the same stand-in
	cmis[222] = checkCode(cmis[128:222])
	unknown := make([]byte, 256)
	unknown[128] = 0x7f
	copy(unknown[140:], "SECRET")
	upper := ethtoolnl.EEPROMPage{I2CAddr: 0x50, Page: 0, Offset: 128, Length: 128}
	files := map[string][]byte{}
	for i, view := range [][]byte{sff, cmis, unknown} {
		nd := []string{"eth0", "eth1", "eth2"}[i]
		req := ethtoolnl.ModuleEEPROMRequest(fam, nd, upper)
		name := req.Key() + ".bin"
		files[name] = view
		if err := os.WriteFile(filepath.Join(dir, EthtoolNetlinkDir, name), ethtooltest.Encoder{}.EEPROMReply(fam, uint32(4+i), nd, view[128:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Redact(dir); err != nil {
		t.Fatal(err)
	}
	var stands [][]byte
	for name, view := range files {
		b, err := os.ReadFile(filepath.Join(dir, EthtoolNetlinkDir, name))
		if err != nil {
			t.Fatal(err)
		}
		data, err := ethtoolnl.DecodeModuleEEPROM(b, fam)
		if err != nil {
			t.Fatalf("redacted reply no longer decodes: %v", err)
		}
		got := append(make([]byte, 128), data...)
		if bytes.Contains(got, []byte("MT1234FT05678")) || bytes.Contains(got, []byte("SECRET")) {
			t.Errorf("serial left in %x", got)
		}
		switch view[128] {
		case 0x11:
			if got[223] != checkCode(got[192:223]) || !bytes.Equal(got[168:184], view[168:184]) {
				t.Errorf("SFF-8636: check code or part number broken")
			}
			stands = append(stands, got[196:212])
		case 0x18:
			if got[222] != checkCode(got[128:222]) || !bytes.Equal(got[148:164], view[148:164]) {
				t.Errorf("CMIS: checksum or part number broken")
			}
			stands = append(stands, got[166:182])
		default:
			if got[128] != 0x7f {
				t.Error("identifier of an unknown layout cleared")
			}
		}
	}
	if len(stands) != 2 || !bytes.Equal(stands[0], stands[1]) || len(bytes.TrimSpace(stands[0])) != 16 {
		t.Errorf("stand-ins %q", stands)
	}
}
