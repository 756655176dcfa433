package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sameInventory is what makes every e2e-speed boot fail when the verbs GID tables describe the
// devices otherwise than the sysfs walk: it must tell equal inventories from different ones, and
// refuse reports it cannot compare rather than call them the same.
func TestSameInventory(t *testing.T) {
	const inv = `{"devices":[{"name":"rxe0","ports":[{"port":1,"gid":{"index":1,"gid":"0000:0000:0000:0000:0000:ffff:0a00:020f","type":"RoCE v2"},"netdevs":["eth0"]}]}]}`
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The same inventory inside a check report and an inventory report, keys in another order.
	check := file("check.json", `{"verdict":"healthy","host":{"source":"live","inventory":`+inv+`},"findings":[]}`)
	reordered := file("inventory.json", `{"host":{"inventory":{"devices":[{"ports":[{"netdevs":["eth0"],"port":1,"gid":{"type":"RoCE v2","gid":"0000:0000:0000:0000:0000:ffff:0a00:020f","index":1}}],"name":"rxe0"}]}}}`)
	otherType := file("other.json", `{"host":{"inventory":`+strings.Replace(inv, "RoCE v2", "IB/RoCE v1", 1)+`}}`)
	noNetdev := file("nonetdev.json", `{"host":{"inventory":`+strings.Replace(inv, `"eth0"`, "", 1)+`}}`)
	for name, c := range map[string]struct {
		a, b string
		want string // "" when they are the same
	}{
		"same":              {check, reordered, ""},
		"another GID type":  {check, otherType, "inventories differ"},
		"a netdev missing":  {check, noNetdev, "inventories differ"},
		"missing file":      {check, filepath.Join(dir, "absent.json"), "no such file"},
		"empty file":        {check, file("empty.json", ""), "empty.json"},
		"garbled":           {file("garbled.json", `{"host":`), check, "garbled.json"},
		"no inventory":      {check, file("noinv.json", `{"host":{"source":"live"}}`), "no host.inventory"},
		"inventory is null": {file("null.json", `{"host":{"inventory":null}}`), check, "no host.inventory"},
	} {
		err := sameInventory(c.a, c.b)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
}
