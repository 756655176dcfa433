package devsel

import "testing"

func TestExcluded(t *testing.T) {
	s := &Selector{
		Exclude: []Rule{{"mlx5_bond_*", "policy p.json devices.exclude[0]"}, {"0000:3b:00.*", "--exclude"}, {"eno*", "--exclude"}},
		Include: []Rule{{"0000:3b:00.1", "--include"}},
	}
	for _, tc := range []struct {
		names []string
		want  bool
		from  string
	}{
		{[]string{"mlx5_bond_0", "0000:5e:00.0"}, true, "policy p.json devices.exclude[0]"},
		{[]string{"mlx5_0", "0000:3b:00.0", "ens1f0np0"}, true, "--exclude"},
		{[]string{"mlx5_1", "0000:3b:00.1"}, false, ""}, // included again
		{[]string{"irdma0", "0000:86:00.0", "eno1"}, true, "--exclude"},
		{[]string{"mlx5_2", "0000:86:00.0", ""}, false, ""},
	} {
		r, got := s.Excluded(tc.names...)
		if got != tc.want || r.From != tc.from {
			t.Errorf("%v: excluded %v by %q, want %v by %q", tc.names, got, r.From, tc.want, tc.from)
		}
	}
	var none *Selector
	if _, ex := none.Excluded("mlx5_0"); ex || !none.Empty() {
		t.Error("nil selector excludes")
	}
	if Valid("mlx5_[0") == nil || Valid("") == nil || Valid("mlx5_*") != nil {
		t.Error("Valid")
	}
}
