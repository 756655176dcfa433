package inventory

import "testing"

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Rate
		wantErr bool
	}{
		{"100 Gb/sec (4X EDR)", Rate{100, 4, "EDR"}, false},
		{"400 Gb/sec (4X NDR)", Rate{400, 4, "NDR"}, false},
		{"2.5 Gb/sec (1X SDR)", Rate{2.5, 1, "SDR"}, false}, // rxe on a netdev without speed (lab)
		{"56 Gb/sec (4X FDR)", Rate{56, 4, "FDR"}, false},
		{"10 Gb/sec (4X)", Rate{10, 4, ""}, false}, // pre-HDR kernels: SDR without a name
		{"40 Gb/sec (4X QDR)\n", Rate{40, 4, "QDR"}, false},
		{"800 Gb/sec (8X NDR)", Rate{800, 8, "NDR"}, false},
		{"25 Gb/sec", Rate{25, 0, ""}, false},
		{"Gb/sec (4X EDR)", Rate{}, true},
		{"100 Gb/sec (4 EDR)", Rate{}, true},
		{"100 Gb/sec (4X EDR", Rate{}, true},
		{"-5 Gb/sec (1X SDR)", Rate{}, true},
		{"NaN Gb/sec", Rate{}, true},
		{"", Rate{}, true},
	} {
		got, err := ParseRate(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseRate(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && got != tc.want {
			t.Errorf("ParseRate(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestRateStringRoundTrip(t *testing.T) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (4X)"} {
		r, err := ParseRate(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseRate(%q).String() = %q, %v", s, r.String(), err)
		}
	}
}
