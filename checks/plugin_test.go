package checks

import (
	"context"
	"slices"
	"testing"
)

// TestPluginPlacement: an executable plugin's id, plugin.<name>, is valid only placed in a layer;
// --only and --skip select it by id, by its layer and by the plugin prefix, as built-ins are.
func TestPluginPlacement(t *testing.T) {
	run := func(context.Context, *Env) ([]Finding, error) { return nil, nil }
	base := NewRegistry()
	base.Add(Check{ID: "port.state", Fault: "port-link", Run: run})
	for _, bad := range []Check{
		{ID: "plugin.x", Fault: "site-plugin", Run: run},                    // not placed
		{ID: "port.x", InLayer: "site", Fault: "site-plugin", Run: run},     // a built-in id placed elsewhere
		{ID: "plugin.x", InLayer: "gpu", Fault: "site-plugin", Run: run},    // no such layer
		{ID: "port.state", InLayer: "", Fault: "port-link", Run: run},       // taken
		{ID: "plugin.Bad", InLayer: "site", Fault: "site-plugin", Run: run}, // not lowercase
	} {
		if _, err := base.With(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	r, err := base.With(Check{ID: "plugin.pkey", InLayer: "port", Fault: "site-plugin", Run: run},
		Check{ID: "plugin.bios", InLayer: "site", Fault: "site-plugin", Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if base.Has("plugin.pkey") || !r.Has("plugin.pkey") {
		t.Error("With changed the base registry or lost the plugin")
	}
	ids := func(cs []Check) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, c := range []struct {
		only, skip []string
		want       []string
	}{
		{[]string{"port"}, nil, []string{"plugin.pkey", "port.state"}},
		{[]string{"plugin"}, nil, []string{"plugin.pkey", "plugin.bios"}},
		{[]string{"site"}, nil, []string{"plugin.bios"}},
		{[]string{"plugin.*"}, []string{"plugin.bios"}, []string{"plugin.pkey"}},
		{nil, []string{"plugin"}, []string{"port.state"}},
	} {
		got, err := r.Select(c.only, c.skip, false)
		if err != nil || !slices.Equal(ids(got), c.want) {
			t.Errorf("--only %v --skip %v: %v %v, want %v", c.only, c.skip, ids(got), err, c.want)
		}
	}
}
