package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// watchCommands are the rdmadiag watch command lines of the systemd unit and the DaemonSet.
func watchCommands(t *testing.T) []commandLine {
	t.Helper()
	var out []commandLine
	b, err := os.ReadFile("systemd/rdmadiag-watch.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			f := strings.Fields(v)
			if len(f) == 0 || f[0] != binaryPath {
				t.Fatalf("ExecStart=%s does not run %s", v, binaryPath)
			}
			out = append(out, commandLine{"systemd/rdmadiag-watch.service", f[1:]})
		}
	}
	const path = "kubernetes/rdmadiag-watch.yaml"
	for _, o := range manifestObjects(t, path) {
		if o["kind"] != "DaemonSet" {
			continue
		}
		spec := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		for _, c := range spec["containers"].([]any) {
			var args []string
			for _, a := range c.(map[string]any)["command"].([]any) {
				args = append(args, a.(string))
			}
			if len(args) > 0 && args[0] == binaryPath {
				out = append(out, commandLine{path, args[1:]})
			}
		}
	}
	if len(out) != 2 {
		t.Fatalf("found %d watch command lines, want the unit's and the DaemonSet's", len(out))
	}
	return out
}

// TestWatchCommandLines runs each deployment's exact watch command line (on a fixture tree, with
// a temporary state directory and a free port, which later flags override): this binary takes
// every flag, writes JSON events, and stops with exit 0 on SIGTERM as systemd and the kubelet
// stop it.
func TestWatchCommandLines(t *testing.T) {
	bin := buildRdmadiag(t)
	if help, _ := exec.Command(bin, "watch", "--help").CombinedOutput(); !strings.Contains(string(help), "--state-dir") {
		t.Skip("this rdmadiag has no watch command")
	}
	for _, cl := range watchCommands(t) {
		t.Run(cl.where, func(t *testing.T) {
			dir := t.TempDir()
			root := minimalTree(t, dir)
			args := append(append([]string{}, cl.args...), "--root", root, "--state-dir", filepath.Join(dir, "state"), "--listen", "127.0.0.1:0")
			cmd := exec.Command(bin, args...)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			sc := bufio.NewScanner(stdout)
			got := make(chan bool, 1)
			go func() {
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), `{"time":`) && strings.Contains(sc.Text(), `"kind":"set"`) {
						got <- true
						break
					}
				}
				for sc.Scan() {
				}
			}()
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				t.Fatalf("%v: no condition event in 10 s; stderr: %s", args, stderr.String())
			}
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%v: after SIGTERM: %v; stderr: %s", args, err, stderr.String())
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("%v: still running 2 s after SIGTERM", args)
			}
		})
	}
}

// minimalTree lays out one InfiniBand device whose port is down, as ib_core's sysfs shows it
// (drivers/infiniband/core/sysfs.c: state "1: DOWN", phys_state "3: Disabled").
func minimalTree(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join(dir, "root")
	dev := filepath.Join(root, "sys/devices/virtual/infiniband/ibtest0")
	for f, v := range map[string]string{"ports/1/state": "1: DOWN\n", "ports/1/phys_state": "3: Disabled\n",
		"ports/1/link_layer": "InfiniBand\n", "node_guid": "0002:c903:0000:0001\n"} {
		p := filepath.Join(dev, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	class := filepath.Join(root, "sys/class/infiniband")
	if err := os.MkdirAll(class, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../devices/virtual/infiniband/ibtest0", filepath.Join(class, "ibtest0")); err != nil {
		t.Fatal(err)
	}
	return root
}
