package snapshot_test

import (
	"reflect"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
)

// The devlink decoders against bytes a real kernel sent: fixtures/sysfs/devlink-netdevsim was
// recorded in the lab (Debian 12, Linux 6.1) with one netdevsim instance, whose info and health
// reporters are fixed by drivers/net/netdevsim/{dev,health}.c. Unlike the dltest round trips,
// this catches a decoder that agrees with its own encoder but not with the kernel.
func TestDevlinkNetdevsimFixture(t *testing.T) {
	h, cleanup, err := snapshot.Open("../../fixtures/sysfs/devlink-netdevsim/snapshot.txtar")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	c := devlink.NewClient(h.Devlink())
	if fam, err := c.Family(); err != nil || fam == 0 {
		t.Fatalf("family: %d %v", fam, err)
	}
	nsim := devlink.Handle{Bus: "netdevsim", Dev: "netdevsim1"}
	devs, err := c.Devices()
	if err != nil || !reflect.DeepEqual(devs, []devlink.Handle{nsim}) {
		t.Fatalf("devices: %v %v", devs, err)
	}
	info, err := c.Info(nsim)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if info.Handle != nsim || info.Driver != "netdevsim" {
		t.Errorf("info: %+v", info)
	}

	rs, err := c.Reporters()
	if err != nil {
		t.Fatalf("reporters: %v", err)
	}
	byName := map[string]devlink.Reporter{}
	for _, r := range rs {
		byName[r.Name] = r
	}
	if len(rs) != 2 {
		t.Errorf("want the reporters empty and dummy, have %+v", rs)
	}
	for _, name := range []string{"empty", "dummy"} {
		r, ok := byName[name]
		if !ok || r.Handle != nsim || r.HasPort || r.StateName() != "healthy" || r.ErrCount != 0 || r.RecoverCount != 0 {
			t.Errorf("reporter %s: %+v (present %v)", name, r, ok)
		}
	}
	// dummy has a recover operation, so it has a grace period and auto-recovers; empty has none.
	if d := byName["dummy"]; !d.HasGracePeriod || !d.AutoRecover {
		t.Errorf("dummy: %+v", d)
	}
	if e := byName["empty"]; e.HasGracePeriod {
		t.Errorf("empty: %+v", e)
	}

	empty, err := c.Diagnose(nsim, "empty")
	if err != nil || len(empty) != 0 {
		t.Errorf("empty diagnose: %v %v", empty, err)
	}
	d, err := c.Diagnose(nsim, "dummy")
	if err != nil {
		t.Fatalf("dummy diagnose: %v", err)
	}
	// test_binary is 16 random bytes, sent as an array of binary chunks.
	bin, _ := d.Get("test_binary")
	if a, ok := bin.(devlink.Array); !ok || len(a) != 1 || len(a[0].([]byte)) != 16 {
		t.Errorf("test_binary: %#v", bin)
	}
	want := devlink.Object{
		{Name: "test_bool", Value: true},
		{Name: "test_u8", Value: uint8(1)},
		{Name: "test_u32", Value: uint32(3)},
		{Name: "test_u64", Value: uint64(4)},
		{Name: "test_string", Value: "somestring"},
		{Name: "test_binary", Value: bin},
		{Name: "test_nest", Value: devlink.Object{{Name: "nested_test_bool", Value: false}, {Name: "nested_test_u8", Value: uint8(0)}}},
		{Name: "test_u32_array", Value: devlink.Array{uint32(0), uint32(1), uint32(2), uint32(3), uint32(4), uint32(5), uint32(6), uint32(7), uint32(8), uint32(9)}},
	}
	objs := devlink.Array{}
	for i := 0; i < 10; i++ {
		objs = append(objs, devlink.Object{{Name: "in_array_nested_test_bool", Value: false}, {Name: "in_array_nested_test_u8", Value: uint8(i)}})
	}
	want = append(want, devlink.Field{Name: "test_array_of_objects", Value: objs})
	if !reflect.DeepEqual(d, want) {
		t.Errorf("dummy diagnose:\n have %#v\n want %#v", d, want)
	}
}
