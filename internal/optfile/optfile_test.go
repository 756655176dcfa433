package optfile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bad is one malformed document: where the error must point and what it must say.
type bad struct {
	name, in string
	path     string // the key path (or "line L, column C") the error names
	msg      string // a substring of the message
}

// wantErr checks that err is an *Error naming file, path and msg, and that its text leads with
// the file and the path so that an operator can find the spot.
func wantErr(t *testing.T, err error, file string, tc bad) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T), want an *optfile.Error", tc.name, err, err)
	}
	if e.File != file || e.Path != tc.path || !strings.Contains(e.Msg, tc.msg) {
		t.Errorf("%s: got file %q path %q msg %q; want %q, %q, containing %q", tc.name, e.File, e.Path, e.Msg, file, tc.path, tc.msg)
	}
	lead := file + ": "
	if tc.path != "" {
		lead += tc.path + ": "
	}
	if !strings.HasPrefix(err.Error(), lead) {
		t.Errorf("%s: %q does not start with %q", tc.name, err.Error(), lead)
	}
}

func TestDecodePolicy(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *Policy
	}{
		{"both sections", `{"ports": {"expect_rate_gbps": 400, "by_board_id": {"MT_0000000838": 400, "MT_0000000359": 200.5}, "link_layer": "InfiniBand"},
		  "firmware": {"allowed_psids": ["MT_0000000838"], "min_version": {"MT_0000000838": "28.39.1002"}}}`,
			&Policy{
				Ports: &PortsPolicy{ExpectRateGbps: 400, ByBoardID: map[string]float64{"MT_0000000838": 400, "MT_0000000359": 200.5}, LinkLayer: "InfiniBand"},
				Firmware: &FirmwarePolicy{AllowedPSIDs: []string{"MT_0000000838"},
					MinVersion: map[string]FirmwareVersion{"MT_0000000838": {28, 39, 1002}}},
			}},
		{"no sections", `{}`, &Policy{}},
		{"empty sections", "{\"ports\": {}, \"firmware\": {}}\n", &Policy{Ports: &PortsPolicy{}, Firmware: &FirmwarePolicy{}}},
		{"link layer spelt loosely", `{"ports": {"link_layer": "ethernet"}}`, &Policy{Ports: &PortsPolicy{LinkLayer: "Ethernet"}}},
		{"devices excluded", `{"devices": {"exclude": ["mlx5_bond_*", "0000:3b:00.1"]}}`, &Policy{Devices: &DevicesPolicy{Exclude: []string{"mlx5_bond_*", "0000:3b:00.1"}}}},
		{"ports expected up", `{"ports": {"expect_up": ["mlx5_*/1", "0000:3b:00.1"]}}`, &Policy{Ports: &PortsPolicy{ExpectUp: []string{"mlx5_*/1", "0000:3b:00.1"}}}},
		{"lossless RoCE", `{"ports": {"pfc_priorities": [3, 0], "trust": "DSCP"}}`, &Policy{Ports: &PortsPolicy{PFCPriorities: []int{0, 3}, Trust: "dscp"}}},
		{"lossy RoCE", `{"ports": {"pfc_priorities": []}}`, &Policy{Ports: &PortsPolicy{PFCPriorities: []int{}}}},
		{"partition keys", `{"ports": {"pkeys": ["0xffff", "8001", "0x7FFF"]}}`, &Policy{Ports: &PortsPolicy{PKeys: []uint16{0xffff, 0x8001, 0x7fff}}}},
		{"the largest believable rate", `{"ports": {"expect_rate_gbps": 24000}}`, &Policy{Ports: &PortsPolicy{ExpectRateGbps: 24000}}},
		{"a build number with its zeros", `{"firmware": {"min_version": {"MT_1": "20.43.0066"}}}`,
			&Policy{Firmware: &FirmwarePolicy{MinVersion: map[string]FirmwareVersion{"MT_1": {20, 43, 66}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodePolicy([]byte(tc.in), "policy.json")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v %+v %+v\nwant %+v %+v %+v", got, got.Ports, got.Firmware, tc.want, tc.want.Ports, tc.want.Firmware)
			}
		})
	}
}

func TestDecodePolicyRejects(t *testing.T) {
	for _, tc := range []bad{
		{"bad JSON", `{"ports": }`, "line 1, column 11", "not JSON: invalid character '}'"},
		{"bad JSON on a later line", "{\n  \"ports\": {\n    \"expect_rate_gbps\": 400,\n  }\n}", "line 4, column 3", "not JSON"},
		{"cut short", `{"ports": {"expect_rate_gbps": 400}`, "", "ends early"},
		{"empty file", " \n", "", "empty file"},
		{"not an object", `[]`, "", "want a JSON object"},
		{"null document", `null`, "", "got null"},
		{"unknown section", `{"prots": {}}`, "prots", "unknown section (want ports, firmware, topology or devices)"},
		{"a section of another tool", `{"ports": {}, "qp": {"anything": 1}}`, "qp", "unknown section"},
		{"unknown key", `{"ports": {"expect_rate": 400}}`, "ports.expect_rate", "unknown key (want expect_rate_gbps, by_board_id, link_layer, expect_up, pkeys, pfc_priorities or trust)"},
		{"unknown key in another casing", `{"ports": {"Link_Layer": "InfiniBand"}}`, "ports.Link_Layer", "unknown key"},
		{"unknown firmware key", `{"firmware": {"allowed": ["X"]}}`, "firmware.allowed", "unknown key (want allowed_psids or min_version)"},
		{"unprintable unknown key", "{\"ports\": {\"a\\u0000b\": 1}}", `ports["a\x00b"]`, "unknown key"},
		{"duplicate key", `{"ports": {"expect_rate_gbps": 400, "expect_rate_gbps": 200}}`, "line 1, column 37", `key "expect_rate_gbps" appears twice`},
		{"duplicate section", `{"ports": {}, "ports": {}}`, "line 1, column 15", "appears twice"},
		{"trailing object", `{"ports": {}} {"ports": {}}`, "line 1, column 15", "trailing data"},
		{"trailing garbage", "{}\nx", "line 2, column 1", "trailing data"},
		{"ports not an object", `{"ports": 400}`, "ports", "got 400"},
		{"ports null", `{"ports": null}`, "ports", "got null"},
		{"rate as a string", `{"ports": {"by_board_id": {"MT_0000000838": "400"}}}`, `ports.by_board_id["MT_0000000838"]`, `want a number of Gb/s > 0 (at most 24000), got "400"`},
		{"negative rate", `{"ports": {"expect_rate_gbps": -1}}`, "ports.expect_rate_gbps", "got -1"},
		{"zero rate", `{"ports": {"expect_rate_gbps": 0}}`, "ports.expect_rate_gbps", "> 0"},
		{"rate in Mb/s", `{"ports": {"expect_rate_gbps": 400000}}`, "ports.expect_rate_gbps", "at most 24000"},
		{"rate beyond float64", `{"ports": {"expect_rate_gbps": 1e999}}`, "ports.expect_rate_gbps", "got 1e999"},
		{"zero board rate", `{"ports": {"by_board_id": {"MT_1": 0}}}`, `ports.by_board_id["MT_1"]`, "got 0"},
		{"board rates not an object", `{"ports": {"by_board_id": [400]}}`, "ports.by_board_id", "got an array"},
		{"empty board id", `{"ports": {"by_board_id": {"": 400}}}`, `ports.by_board_id[""]`, "empty"},
		{"board id with a space", `{"ports": {"by_board_id": {"MT_1 ": 400}}}`, `ports.by_board_id["MT_1 "]`, "white space"},
		{"unknown link layer", `{"ports": {"link_layer": "OmniPath"}}`, "ports.link_layer", `want "InfiniBand" or "Ethernet", got "OmniPath"`},
		{"link layer as a number", `{"ports": {"link_layer": 1}}`, "ports.link_layer", "got 1"},
		{"devices exclude empty", `{"devices": {"exclude": []}}`, "devices.exclude", "want a non-empty list"},
		{"devices exclude bad glob", `{"devices": {"exclude": ["["]}}`, "devices.exclude[0]", "or a glob"},
		{"devices unknown key", `{"devices": {"ignore": ["x"]}}`, "devices.ignore", "unknown key"},
		{"expect_up empty", `{"ports": {"expect_up": []}}`, "ports.expect_up", "want a non-empty list"},
		{"pfc priority 8", `{"ports": {"pfc_priorities": [8]}}`, "ports.pfc_priorities[0]", "want a priority 0-7"},
		{"pfc priority twice", `{"ports": {"pfc_priorities": [3, 3]}}`, "ports.pfc_priorities[1]", "listed twice"},
		{"pfc not a list", `{"ports": {"pfc_priorities": 3}}`, "ports.pfc_priorities", "a list of priorities"},
		{"trust unknown", `{"ports": {"trust": "vlan"}}`, "ports.trust", `"dscp" or "pcp"`},
		{"pkeys empty", `{"ports": {"pkeys": []}}`, "ports.pkeys", "want a non-empty list"},
		{"pkey invalid key", `{"ports": {"pkeys": ["0x8000"]}}`, "ports.pkeys[0]", "invalid key"},
		{"pkey too long", `{"ports": {"pkeys": ["0x18001"]}}`, "ports.pkeys[0]", "4 hex digits"},
		{"pkey as a number", `{"ports": {"pkeys": [32769]}}`, "ports.pkeys[0]", "got 32769"},
		{"expect_up bad glob", `{"ports": {"expect_up": ["mlx5_[0"]}}`, "ports.expect_up[0]", "or a glob"},
		{"allowed PSIDs empty", `{"firmware": {"allowed_psids": []}}`, "firmware.allowed_psids", "non-empty list"},
		{"allowed PSIDs a string", `{"firmware": {"allowed_psids": "MT_1"}}`, "firmware.allowed_psids", `got "MT_1"`},
		{"allowed PSID a number", `{"firmware": {"allowed_psids": ["MT_1", 838]}}`, "firmware.allowed_psids[1]", "got 838"},
		{"allowed PSID empty", `{"firmware": {"allowed_psids": [""]}}`, "firmware.allowed_psids[0]", "empty"},
		{"minimum of two fields", `{"firmware": {"min_version": {"MT_1": "28.41"}}}`, `firmware.min_version["MT_1"]`, `got "28.41"`},
		{"minimum with a letter", `{"firmware": {"min_version": {"MT_1": "28.4x.1000"}}}`, `firmware.min_version["MT_1"]`, `field "4x" is not a number`},
		{"minimum out of range", `{"firmware": {"min_version": {"MT_1": "28.41.99999"}}}`, `firmware.min_version["MT_1"]`, "out of range"},
		{"minimum as a number", `{"firmware": {"min_version": {"MT_1": 28.41}}}`, `firmware.min_version["MT_1"]`, "got 28.41"},
		{"minimum for an empty PSID", `{"firmware": {"min_version": {"": "28.41.1000"}}}`, `firmware.min_version[""]`, "empty"},
		{"minimums not an object", `{"firmware": {"min_version": "28.41.1000"}}`, "firmware.min_version", "an object of PSID to firmware version"},
		{"too deep", `{"ports": ` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "line 1, column 27", "nested deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := DecodePolicy([]byte(tc.in), "policy.json")
			if err == nil {
				t.Fatalf("accepted: %+v", p)
			}
			wantErr(t, err, "policy.json", tc)
		})
	}
}

func TestDecodeWRProfile(t *testing.T) {
	p, err := DecodeWRProfile([]byte(`{"applications": {"ib_write_bw": 128, "[nvme_rdma]": 4096, "trainer": 2147483648}}`), "profile.json")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"ib_write_bw": 128, "[nvme_rdma]": 4096, "trainer": 1 << 31}
	if !reflect.DeepEqual(p.Applications, want) {
		t.Errorf("got %v, want %v", p.Applications, want)
	}
	for _, tc := range []bad{
		{"bad JSON", `{"applications": {"a" 1}}`, "line 1, column 23", "not JSON"},
		{"unknown key", `{"apps": {"a": 1}}`, "apps", "unknown key (want applications)"},
		{"no applications", `{}`, "", `missing key "applications"`},
		{"empty applications", `{"applications": {}}`, "applications", "non-empty object"},
		{"applications a list", `{"applications": ["a"]}`, "applications", "got an array"},
		{"zero", `{"applications": {"a": 0}}`, `applications["a"]`, "from 1 to 2147483648, got 0"},
		{"negative", `{"applications": {"a": -1}}`, `applications["a"]`, "got -1"},
		{"too many", `{"applications": {"a": 2147483649}}`, `applications["a"]`, "got 2147483649"},
		{"a fraction", `{"applications": {"a": 1.5}}`, `applications["a"]`, "whole number"},
		{"an exponent", `{"applications": {"a": 1e3}}`, `applications["a"]`, "got 1e3"},
		{"a string", `{"applications": {"a": "128"}}`, `applications["a"]`, `got "128"`},
		{"empty name", `{"applications": {" ": 5}}`, `applications[" "]`, "empty"},
		{"half a module", `{"applications": {"[nvme_rdma": 5}}`, `applications["[nvme_rdma"]`, `"[module]"`},
		{"empty module", `{"applications": {"[]": 5}}`, `applications["[]"]`, `"[module]"`},
		{"longer than comm", `{"applications": {"a_very_long_trainer": 5}}`, `applications["a_very_long_trainer"]`, "at most 15 bytes"},
		{"trailing data", `{"applications": {"a": 1}}]`, "line 1, column 27", "trailing data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := DecodeWRProfile([]byte(tc.in), "profile.json")
			if err == nil {
				t.Fatalf("accepted: %+v", p)
			}
			wantErr(t, err, "profile.json", tc)
		})
	}
}

// families stands for the firmware checks' table in these tests.
func families(major int) bool { return major == 16 || major == 20 || major == 28 }

func TestDecodeMatrix(t *testing.T) {
	rows, err := DecodeMatrix([]byte(`{"_comment": "site rows", "rows": [
		{"family": 16, "driver": "ofed", "driver_version": "5.7", "min": "16.27.2000", "recommended": "16.35.2000", "source": "MLNX_OFED 5.7 release notes", "note": "n"},
		{"family": 28, "driver": "inbox", "recommended": "28.39.1002", "source": "site qualification"}]}`), "site.json", families)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Min != "16.27.2000" || rows[0].Note != "n" || rows[1].DriverVersion != "" || rows[1].From != "site.json" {
		t.Fatalf("%+v", rows)
	}
	if v, ok := rows[0].MinVersion(); !ok || v != (FirmwareVersion{16, 27, 2000}) {
		t.Errorf("min %v %v", v, ok)
	}
	if _, ok := rows[1].MinVersion(); ok {
		t.Error("a row without min has no minimum")
	}
	if v, ok := rows[1].RecommendedVersion(); !ok || v != (FirmwareVersion{28, 39, 1002}) {
		t.Errorf("recommended %v %v", v, ok)
	}
	row := func(fields string) string { return `{"rows": [{` + fields + `}]}` }
	for _, tc := range []bad{
		{"bad JSON", `{"rows": [}`, "line 1, column 11", "not JSON"},
		{"unknown top-level key", `{"rows": [], "comment": "x"}`, "comment", "unknown key (want _comment or rows)"},
		{"comment not a string", `{"_comment": 1, "rows": []}`, "_comment", "want a string"},
		{"no rows", `{"_comment": "x"}`, "", `missing key "rows"`},
		{"empty rows", `{"rows": []}`, "rows", "non-empty list"},
		{"rows an object", `{"rows": {}}`, "rows", "got an object"},
		{"row a string", `{"rows": ["x"]}`, "rows[0]", "want a row object"},
		{"unknown row key", row(`"family": 16, "driver": "ofed", "min": "16.27.2000", "source": "x", "max": "1"`), "rows[0].max", "unknown key"},
		{"no source", row(`"family": 16, "driver": "ofed", "min": "16.27.2000"`), "rows[0]", `missing key "source"`},
		{"empty source", row(`"family": 16, "driver": "ofed", "min": "16.27.2000", "source": " "`), "rows[0].source", "citation"},
		{"no family", row(`"driver": "ofed", "min": "16.27.2000", "source": "x"`), "rows[0]", `missing key "family"`},
		{"unknown family", row(`"family": 99, "driver": "ofed", "min": "99.1.1", "source": "x"`), "rows[0].family", "got 99"},
		{"negative family", row(`"family": -16, "driver": "ofed", "min": "16.1.1", "source": "x"`), "rows[0].family", "got -16"},
		{"family as a string", row(`"family": "16", "driver": "ofed", "min": "16.1.1", "source": "x"`), "rows[0].family", `got "16"`},
		{"family with a fraction", row(`"family": 16.0, "driver": "ofed", "min": "16.1.1", "source": "x"`), "rows[0].family", "got 16.0"},
		{"driver kind", row(`"family": 16, "driver": "mofed", "min": "16.27.2000", "source": "x"`), "rows[0].driver", `got "mofed"`},
		{"driver series a number", row(`"family": 16, "driver": "ofed", "driver_version": 5.7, "min": "16.27.2000", "source": "x"`), "rows[0].driver_version", "got 5.7"},
		{"version of another family", row(`"family": 16, "driver": "ofed", "min": "20.27.2000", "source": "x"`), "rows[0].min", `"16.MINOR.SUBMINOR" (family 16), got "20.27.2000"`},
		{"malformed version", row(`"family": 16, "driver": "ofed", "recommended": "16.27", "source": "x"`), "rows[0].recommended", `got "16.27"`},
		{"nothing to judge", row(`"family": 16, "driver": "ofed", "source": "x"`), "rows[0]", "needs min or recommended"},
		{"recommended older than min", row(`"family": 16, "driver": "ofed", "min": "16.35.2000", "recommended": "16.27.2000", "source": "x"`), "rows[0].recommended", "no older than min 16.35.2000"},
		{"note not a string", row(`"family": 16, "driver": "ofed", "min": "16.27.2000", "source": "x", "note": 1`), "rows[0].note", "want a string"},
		{"one series twice", `{"rows": [{"family": 16, "driver": "ofed", "driver_version": "5.7", "min": "16.27.2000", "source": "x"},
			{"family": 16, "driver": "ofed", "driver_version": "5.7", "min": "16.28.1002", "source": "y"}]}`, "rows[1]", "as rows[0]"},
		{"trailing data", `{"rows": [{"family": 16, "driver": "ofed", "min": "16.27.2000", "source": "x"}]},`, "line 1, column 81", "trailing data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := DecodeMatrix([]byte(tc.in), "site.json", families)
			if err == nil {
				t.Fatalf("accepted: %+v", rows)
			}
			wantErr(t, err, "site.json", tc)
		})
	}
}

func TestParseFirmwareVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want FirmwareVersion
		err  string
	}{
		{"16.26.1040", FirmwareVersion{16, 26, 1040}, ""},
		{"28.41.1000\n", FirmwareVersion{28, 41, 1000}, ""}, // as fw_ver reads
		{"16.26", FirmwareVersion{}, `firmware version "16.26": want MAJOR.MINOR.SUBMINOR`},
		{"16.x.1", FirmwareVersion{}, `field "x" is not a number`},
		{"16.1.65536", FirmwareVersion{}, `field "65536" is out of range`},
	} {
		got, err := ParseFirmwareVersion(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseFirmwareVersion(%q) = %v, %v; want %v, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// Reading a file: a missing one, a directory and an oversized one are errors naming the file.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	_, err := LoadPolicy(missing)
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != missing+": no such file" {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadMatrix(dir, families); err == nil || !strings.HasPrefix(err.Error(), dir+": cannot read") {
		t.Errorf("a directory: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"applications": {"a": 1}}`+strings.Repeat(" ", MaxFileSize)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadWRProfile(big); err == nil || !strings.Contains(err.Error(), big+": larger than") {
		t.Errorf("an oversized file: %v", err)
	}
	good := filepath.Join(dir, "profile.json")
	if err := os.WriteFile(good, []byte(`{"applications": {"a": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := LoadWRProfile(good); err != nil || p.Applications["a"] != 1 {
		t.Errorf("%+v %v", p, err)
	}
}

// An option file must be a regular file: a FIFO no one writes to (whose open would wait for a
// writer), a device and a socket are refused at once, naming what they are.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "policy.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct{ file, want string }{
		{fifo, "a named pipe (FIFO), not a regular file"},
		{"/dev/null", "a character device, not a regular file"},
		{sock, "a socket"},
	} {
		done := make(chan error, 3)
		go func() {
			_, err := LoadPolicy(tc.file)
			done <- err
			_, err = LoadMatrix(tc.file, families)
			done <- err
			_, err = LoadWRProfile(tc.file)
			done <- err
		}()
		for range 3 {
			select {
			case err := <-done:
				if err == nil || !strings.HasPrefix(err.Error(), tc.file+": cannot read: "+tc.want) {
					t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: still reading after 10 s", tc.file)
			}
		}
	}
}
