package kubernetes

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestWatchWiring: the watch DaemonSet runs rdmadiag watch itself (no shell: SIGTERM reaches
// it), serves on the port it declares, probes /healthz there, and keeps its state in the
// host's /var/lib/rdmadiag.
func TestWatchWiring(t *testing.T) {
	m := byFile(t, load(t), "rdmadiag-watch.yaml")
	ds := m.daemonSets()[0]
	spec := ds.Spec.Template.Spec
	c := containerNamed(t, ds, "rdmadiag")
	args := append(append([]string{}, c.Command...), c.Args...)
	if len(args) < 2 || args[0] != rdmadiagPath || args[1] != "watch" {
		t.Fatalf("container runs %v, want %s watch directly (a shell in between would take SIGTERM)", args, rdmadiagPath)
	}
	listen, ok := flagValue(args, "--listen")
	if !ok {
		t.Fatal("no --listen: nothing would serve /metrics and /healthz")
	}
	_, portText, _ := strings.Cut(listen, ":")
	port, err := strconv.Atoi(portText)
	if err != nil || len(c.Ports) != 1 || c.Ports[0].ContainerPort != int32(port) || c.Ports[0].Name != "metrics" {
		t.Errorf("--listen %s does not match the declared port %v", listen, c.Ports)
	}
	if ann := ds.Spec.Template.Annotations["prometheus.io/port"]; ann != portText {
		t.Errorf("prometheus.io/port %q, want %s", ann, portText)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s probe %v: want GET /healthz on the metrics port", name, p)
		}
	}
	dir, ok := flagValue(args, "--state-dir")
	vm := mountAt(c, dir)
	if !ok || vm == nil || vm.ReadOnly {
		t.Fatalf("--state-dir %q is not a writable mount", dir)
	}
	hp := hostPathOf(spec, vm.Name)
	if hp == nil || hp.Path != watchStateDir || hp.Type == nil || *hp.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("the state directory is not the host's %s (DirectoryOrCreate): a new pod would lose the boot's conditions", watchStateDir)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 2 {
		t.Errorf("terminationGracePeriodSeconds %v: watch stops within 1 s of SIGTERM; leave it room", g)
	}
	if _, probes := flagValue(args, "--probe-every"); probes {
		t.Error("--probe-every: the probes create verbs resources and push traffic through NICs jobs share")
	}
}
