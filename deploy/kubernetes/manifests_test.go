// Package kubernetes holds the DaemonSets that run rdmadiag on every RDMA node. The tests decode
// every manifest strictly with the Kubernetes API types (an unknown or duplicated field fails, as
// `kubectl apply` with server-side strict field validation would) and assert the host access each
// DaemonSet is meant to have.
package kubernetes

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	namespace = "rdmadiag"
	// rdmadiagPath is where deploy/container/Containerfile installs the binary.
	rdmadiagPath = "/usr/local/bin/rdmadiag"
	npdPath      = "/usr/local/bin/node-problem-detector"
	// watchStateDir is rdmadiag watch's default --state-dir.
	watchStateDir = "/var/lib/rdmadiag"
	// pluginConfigFile is the custom plugin monitor shipped for hosts that run npd without
	// Kubernetes; the ConfigMap must carry the same content.
	pluginConfigFile = "../npd/rdmadiag-plugin-monitor.json"
)

// decoder decodes YAML into the registered API types and fails on unknown and duplicate fields.
func decoder(t *testing.T) *kjson.Serializer {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
}

// decodeStrict decodes one YAML document; a strict-decoding complaint is an error like any other.
func decodeStrict(d *kjson.Serializer, doc []byte) (runtime.Object, error) {
	obj, _, err := d.Decode(doc, nil, nil)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// documents splits a multi-document YAML file, dropping documents that hold only comments.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(out)+1, err)
		}
		if string(j) == "null" {
			continue
		}
		out = append(out, doc)
	}
}

// manifest is one file's decoded objects.
type manifest struct {
	path string
	objs []runtime.Object
}

func (m manifest) daemonSets() []*appsv1.DaemonSet {
	var out []*appsv1.DaemonSet
	for _, o := range m.objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			out = append(out, ds)
		}
	}
	return out
}

func manifestFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d manifests (%v), want the npd and the textfile DaemonSets", len(files), files)
	}
	return files
}

// load decodes every manifest of this directory strictly; any error fails the test.
func load(t *testing.T) map[string]manifest {
	t.Helper()
	d := decoder(t)
	out := map[string]manifest{}
	for _, path := range manifestFiles(t) {
		m := manifest{path: path}
		for i, doc := range documents(t, path) {
			obj, err := decodeStrict(d, doc)
			if err != nil {
				t.Errorf("%s: document %d: %v", path, i+1, err)
				continue
			}
			m.objs = append(m.objs, obj)
		}
		out[path] = m
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	for path, m := range load(t) {
		if len(m.objs) == 0 {
			t.Errorf("%s: no objects", path)
		}
		if len(m.daemonSets()) != 1 {
			t.Errorf("%s: %d DaemonSets, want 1", path, len(m.daemonSets()))
		}
		for _, o := range m.objs {
			switch o.(type) {
			case *corev1.Namespace, *rbacv1.ClusterRoleBinding, *rbacv1.ClusterRole:
				continue
			}
			meta, ok := o.(interface{ GetNamespace() string })
			if !ok || meta.GetNamespace() != namespace {
				t.Errorf("%s: %T is not in namespace %q", path, o, namespace)
			}
		}
	}
}

// TestStrictDecoderRejects shows that the decoder the manifests pass is strict: each of these
// mistakes would be dropped silently by a lenient decoder.
func TestStrictDecoderRejects(t *testing.T) {
	const valid = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: x, namespace: rdmadiag}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      hostNetwork: true
      containers:
        - name: c
          image: i
          securityContext: {readOnlyRootFilesystem: true}
`
	d := decoder(t)
	obj, err := decodeStrict(d, []byte(valid))
	if err != nil {
		t.Fatalf("valid DaemonSet: %v", err)
	}
	if ds, ok := obj.(*appsv1.DaemonSet); !ok || !ds.Spec.Template.Spec.HostNetwork {
		t.Fatalf("valid DaemonSet decoded as %#v", obj)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"misspelt pod field", "hostNetwork: true", "hostNetwrk: true", "unknown field"},
		{"misspelt container field", "readOnlyRootFilesystem", "readOnlyRootFileSystem", "unknown field"},
		{"field at the wrong level", "      hostNetwork: true", "      hostNetwork: true\n      readOnly: true", "unknown field"},
		{"duplicate field", "      hostNetwork: true", "      hostNetwork: true\n      hostNetwork: false", "already set"},
		{"wrong type", "hostNetwork: true", `hostNetwork: "yes"`, "cannot unmarshal"},
		{"unknown kind", "kind: DaemonSet", "kind: DaemonSett", "no kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(valid, tc.from, tc.to, 1)
			if doc == valid {
				t.Fatalf("%q not in the valid document", tc.from)
			}
			_, err := decodeStrict(d, []byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decode = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// runsRdmadiag tells the containers whose image carries rdmadiag (the tool and the npd image).
func runsRdmadiag(c corev1.Container) bool {
	repo := c.Image
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return strings.HasPrefix(filepath.Base(repo), "rdmadiag")
}

// watchState is the one host path a container may write: rdmadiag watch's --state-dir, the
// host's /var/lib/rdmadiag, where the conditions of the current boot outlive the pod.
func watchState(c corev1.Container, vm corev1.VolumeMount, hp *corev1.HostPathVolumeSource) bool {
	args := append(slices.Clone(c.Command), c.Args...)
	dir, ok := flagValue(args, "--state-dir")
	return len(args) > 1 && args[0] == rdmadiagPath && args[1] == "watch" && ok &&
		vm.MountPath == dir && hp.Path == dir && dir == watchStateDir && vm.SubPath == ""
}

func hostPathOf(spec corev1.PodSpec, volume string) *corev1.HostPathVolumeSource {
	for _, v := range spec.Volumes {
		if v.Name == volume {
			return v.HostPath
		}
	}
	return nil
}

func mountAt(c corev1.Container, path string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func TestDaemonSetsHostAccess(t *testing.T) {
	for path, m := range load(t) {
		for _, ds := range m.daemonSets() {
			t.Run(path, func(t *testing.T) { checkDaemonSet(t, ds) })
		}
	}
}

func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet) {
	spec := ds.Spec.Template.Spec
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod template's labels %v", k, v, ds.Spec.Template.Labels)
		}
	}
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v, dnsPolicy %q: RDMA netlink, devlink and ethtool need the host's network namespace", spec.HostNetwork, spec.DNSPolicy)
	}
	if !spec.HostPID {
		t.Error("hostPID false: RDMA netlink hides the QPs and CQs of processes outside the caller's PID namespace")
	}
	if sc := spec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("the pod's seccomp profile is not RuntimeDefault")
	}
	allTaints := slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == "" && tol.Effect == "" && tol.Operator == corev1.TolerationOpExists
	})
	if !allTaints {
		t.Errorf("tolerations %v do not tolerate every taint", spec.Tolerations)
	}
	checkAffinity(t, spec.Affinity)

	used := map[string]bool{}
	var rdmadiag int
	for _, c := range spec.Containers {
		for _, vm := range c.VolumeMounts {
			used[vm.Name] = true
			if hp := hostPathOf(spec, vm.Name); hp != nil && !vm.ReadOnly && !watchState(c, vm, hp) {
				t.Errorf("container %s mounts hostPath volume %s read-write", c.Name, vm.Name)
			}
			if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name }) {
				t.Errorf("container %s mounts undefined volume %s", c.Name, vm.Name)
			}
		}
		checkResources(t, c)
		if runsRdmadiag(c) {
			rdmadiag++
			checkRdmadiagContainer(t, spec, c)
		} else {
			checkUnprivileged(t, c)
		}
	}
	for _, v := range spec.Volumes {
		if !used[v.Name] {
			t.Errorf("volume %s is mounted by no container", v.Name)
		}
	}
	if rdmadiag != 1 {
		t.Errorf("%d containers run rdmadiag, want 1", rdmadiag)
	}
}

func checkAffinity(t *testing.T, a *corev1.Affinity) {
	t.Helper()
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Error("no required node affinity: the DaemonSet would run on every node")
		return
	}
	labels := map[string]bool{}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		linux := false
		for _, e := range term.MatchExpressions {
			labels[e.Key] = true
			linux = linux || (e.Key == "kubernetes.io/os" && e.Operator == corev1.NodeSelectorOpIn && slices.Equal(e.Values, []string{"linux"}))
		}
		if !linux {
			t.Errorf("node selector term %v does not require kubernetes.io/os=linux", term.MatchExpressions)
		}
	}
	// The labels node-feature-discovery's static custom rules publish (source/custom/static_features.go).
	for _, l := range []string{"feature.node.kubernetes.io/custom-rdma.capable", "feature.node.kubernetes.io/custom-rdma.available"} {
		if !labels[l] {
			t.Errorf("node affinity does not select on %s", l)
		}
	}
}

func checkResources(t *testing.T, c corev1.Container) {
	t.Helper()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		limit, ok := c.Resources.Limits[name]
		if !ok {
			t.Errorf("container %s has no %s limit", c.Name, name)
			continue
		}
		if req, ok := c.Resources.Requests[name]; !ok || req.Cmp(limit) > 0 {
			t.Errorf("container %s: %s request %v missing or above the limit %v", c.Name, name, req.String(), limit.String())
		}
	}
	if mem := c.Resources.Limits[corev1.ResourceMemory]; runsRdmadiag(c) && mem.Cmp(resource.MustParse("128Mi")) < 0 {
		t.Errorf("container %s: memory limit %v leaves no room for a host with 100k QPs", c.Name, mem.String())
	}
}

// checkRdmadiagContainer asserts what rdmadiag needs: the host's sysfs, the uverbs and kmsg device
// nodes, the kernel config, and the privilege the manifests' comments justify (the device cgroup
// of an unprivileged container refuses /dev/kmsg whatever its capabilities).
func checkRdmadiagContainer(t *testing.T, spec corev1.PodSpec, c corev1.Container) {
	t.Helper()
	for _, want := range []struct {
		path string
		kind corev1.HostPathType
	}{
		{"/sys", corev1.HostPathDirectory},
		{"/boot", corev1.HostPathDirectoryOrCreate},
		{"/dev/infiniband", corev1.HostPathDirectoryOrCreate},
		{"/dev/kmsg", corev1.HostPathCharDev},
	} {
		vm := mountAt(c, want.path)
		if vm == nil {
			t.Errorf("container %s does not mount %s", c.Name, want.path)
			continue
		}
		hp := hostPathOf(spec, vm.Name)
		if hp == nil || hp.Path != want.path || hp.Type == nil || *hp.Type != want.kind {
			t.Errorf("container %s: %s is not the host's %s (%s)", c.Name, want.path, want.path, want.kind)
		}
		if !vm.ReadOnly {
			t.Errorf("container %s mounts %s read-write", c.Name, want.path)
		}
	}
	if vm := mountAt(c, "/sys"); vm != nil && (vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly != corev1.RecursiveReadOnlyIfPossible) {
		t.Errorf("container %s: /sys is not recursively read-only where the runtime can (cgroupfs, debugfs, efivars below it)", c.Name)
	}
	if vm := mountAt(c, "/proc"); vm != nil {
		t.Errorf("container %s mounts over /proc: hostPID already gives the host's /proc", c.Name)
	}
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("container %s has no securityContext", c.Name)
	}
	if sc.Privileged == nil || !*sc.Privileged {
		t.Errorf("container %s is not privileged: its device cgroup would refuse /dev/kmsg and /dev/infiniband/uverbs*", c.Name)
	}
	if sc.Capabilities != nil {
		t.Errorf("container %s lists capabilities %v: a privileged container has them all, so the list limits nothing", c.Name, sc.Capabilities)
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		t.Errorf("container %s: allowPrivilegeEscalation false contradicts privileged (the API server refuses the pair)", c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container %s: root filesystem is writable", c.Name)
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Errorf("container %s does not run as root: the kernel log and devlink health diagnose need root's capabilities", c.Name)
	}
}

func checkUnprivileged(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("container %s has no securityContext", c.Name)
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("container %s is privileged but does not run rdmadiag", c.Name)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("container %s may escalate privileges", c.Name)
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("container %s: capabilities %v, want drop [ALL] and no add", c.Name, sc.Capabilities)
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("container %s may run as root", c.Name)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("container %s: root filesystem is writable", c.Name)
	}
}

func find[T runtime.Object](m manifest) []T {
	var out []T
	for _, o := range m.objs {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func byFile(t *testing.T, ms map[string]manifest, name string) manifest {
	t.Helper()
	m, ok := ms[name]
	if !ok || len(m.daemonSets()) != 1 {
		t.Fatalf("%s: missing or without its DaemonSet", name)
	}
	return m
}

func containerNamed(t *testing.T, ds *appsv1.DaemonSet, name string) corev1.Container {
	t.Helper()
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("DaemonSet %s has no container %s", ds.Name, name)
	return corev1.Container{}
}

// flagValue returns the value of --name in args, whether written "--name v" or "--name=v".
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// rdmadiagCommand finds the rdmadiag invocation in the loop script and splits it into arguments.
func rdmadiagCommand(t *testing.T, script string) []string {
	t.Helper()
	for _, line := range strings.Split(script, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == rdmadiagPath {
			return slices.DeleteFunc(f[1:], func(s string) bool { return s == "&" })
		}
	}
	t.Fatalf("no line of the script runs %s:\n%s", rdmadiagPath, script)
	return nil
}

func TestTextfileWiring(t *testing.T) {
	m := byFile(t, load(t), "rdmadiag-textfile.yaml")
	ds := m.daemonSets()[0]
	spec := ds.Spec.Template.Spec
	rd, ne := containerNamed(t, ds, "rdmadiag"), containerNamed(t, ds, "node-exporter")
	if len(rd.Args) != 1 || !slices.Equal(rd.Command, []string{"/bin/sh", "-c"}) {
		t.Fatalf("rdmadiag container: command %q args %q, want a /bin/sh -c script", rd.Command, rd.Args)
	}
	args := rdmadiagCommand(t, rd.Args[0])
	if args[0] != "check" || !slices.Contains(args, "--no-probe") {
		t.Errorf("rdmadiag %q: want check --no-probe", args)
	}
	if f, _ := flagValue(args, "--format"); f != "prometheus" {
		t.Errorf("rdmadiag %q: --format %q, want prometheus", args, f)
	}
	out, _ := flagValue(args, "--output")
	if filepath.Ext(out) != ".prom" {
		t.Fatalf("rdmadiag --output %q: node_exporter's textfile collector reads only *.prom", out)
	}
	dir, _ := flagValue(ne.Args, "--collector.textfile.directory")
	w, r := mountAt(rd, filepath.Dir(out)), mountAt(ne, dir)
	if w == nil || r == nil || w.Name != r.Name {
		t.Fatalf("rdmadiag writes %s and node_exporter reads %q: not one shared volume", out, dir)
	}
	if w.ReadOnly || !r.ReadOnly {
		t.Errorf("the textfile volume should be written by rdmadiag (read-only %v) and only read by node_exporter (read-only %v)", w.ReadOnly, r.ReadOnly)
	}
	for _, v := range spec.Volumes {
		if v.Name == w.Name && v.EmptyDir == nil {
			t.Errorf("textfile volume %s is not an emptyDir: a file left by a stopped pod would be served as current", v.Name)
		}
	}
	// No container talks to the API server.
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token it never uses")
	}
	for _, sa := range find[*corev1.ServiceAccount](m) {
		if sa.Name == spec.ServiceAccountName && (sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken) {
			t.Errorf("ServiceAccount %s mounts its token by default", sa.Name)
		}
	}
	if n := len(find[*rbacv1.ClusterRoleBinding](m)) + len(find[*rbacv1.ClusterRole](m)); n != 0 {
		t.Errorf("%d RBAC objects: the textfile variant needs none", n)
	}
}

// npdConfig mirrors the keys node-problem-detector reads from a custom plugin monitor file
// (pkg/custompluginmonitor/types/config.go and types.go, pkg/types/types.go), so that a key npd
// does not know fails the strict decode below.
type npdConfig struct {
	Plugin       string `json:"plugin"`
	PluginConfig struct {
		InvokeInterval                          *string `json:"invoke_interval"`
		Timeout                                 *string `json:"timeout"`
		MaxOutputLength                         *int    `json:"max_output_length"`
		Concurrency                             *int    `json:"concurrency"`
		EnableMessageChangeBasedConditionUpdate *bool   `json:"enable_message_change_based_condition_update"`
		SkipInitialStatus                       *bool   `json:"skip_initial_status"`
	} `json:"pluginConfig"`
	Source     string `json:"source"`
	Conditions []struct {
		Type       string `json:"type"`
		Status     string `json:"status"`
		Transition string `json:"transition"`
		Reason     string `json:"reason"`
		Message    string `json:"message"`
	} `json:"conditions"`
	Rules []struct {
		Type           string   `json:"type"`
		Condition      string   `json:"condition"`
		Reason         string   `json:"reason"`
		Path           string   `json:"path"`
		Args           []string `json:"args"`
		Timeout        *string  `json:"timeout"`
		InvokeInterval *string  `json:"invoke_interval"`
	} `json:"rules"`
	MetricsReporting *bool `json:"metricsReporting"`
}

// duration parses one of npd's duration strings, with npd's default when absent.
func duration(t *testing.T, s *string, def time.Duration, what string) time.Duration {
	t.Helper()
	if s == nil {
		return def
	}
	d, err := time.ParseDuration(*s)
	if err != nil || d <= 0 {
		t.Errorf("%s %q: not a positive duration", what, *s)
	}
	return d
}

// checkPluginConfig validates the plugin monitor as npd's ApplyConfiguration and Validate do,
// plus what rdmadiag needs from it.
func checkPluginConfig(t *testing.T, raw string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var c npdConfig
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("custom plugin monitor: %v", err)
	}
	if c.Plugin != "custom" {
		t.Errorf("plugin %q: npd supports only \"custom\"", c.Plugin)
	}
	// npd's defaults: 30s interval, 5s timeout, 80 bytes of output.
	interval := duration(t, c.PluginConfig.InvokeInterval, 30*time.Second, "invoke_interval")
	global := duration(t, c.PluginConfig.Timeout, 5*time.Second, "timeout")
	if global >= interval {
		t.Errorf("timeout %v is not below invoke_interval %v", global, interval)
	}
	if n := c.PluginConfig.MaxOutputLength; n != nil && *n > 80 {
		t.Errorf("max_output_length %d: the npd format promises at most 80 bytes", *n)
	}
	conds := map[string]bool{}
	for _, cond := range c.Conditions {
		conds[cond.Type] = true
	}
	perm := 0
	for i, r := range c.Rules {
		what := fmt.Sprintf("rule %d", i)
		timeout := duration(t, r.Timeout, global, what+" timeout")
		duration(t, r.InvokeInterval, interval, what+" invoke_interval")
		if timeout > global {
			t.Errorf("%s: timeout %v above the global %v (npd refuses the file)", what, timeout, global)
		}
		switch r.Type {
		case "permanent":
			perm++
			if !conds[r.Condition] {
				t.Errorf("%s: condition %q is not declared in conditions", what, r.Condition)
			}
		case "temporary":
		default:
			t.Errorf("%s: type %q", what, r.Type)
		}
		if r.Path != rdmadiagPath {
			t.Errorf("%s: path %q, want %s (where the image installs it)", what, r.Path, rdmadiagPath)
		}
		if len(r.Args) == 0 || r.Args[0] != "check" {
			t.Errorf("%s: args %q do not start with check", what, r.Args)
		}
		if f, _ := flagValue(r.Args, "--format"); f != "npd" {
			t.Errorf("%s: --format %q, want npd", what, f)
		}
		if v, ok := flagValue(r.Args, "--timeout"); ok {
			if d, err := time.ParseDuration(v); err != nil || d >= timeout {
				t.Errorf("%s: rdmadiag --timeout %q must end the run before npd's %v kills it", what, v, timeout)
			}
		}
	}
	if perm == 0 {
		t.Error("no permanent rule: rdmadiag's verdict sets no NodeCondition")
	}
}

func TestNPDWiring(t *testing.T) {
	m := byFile(t, load(t), "rdmadiag-npd.yaml")
	ds := m.daemonSets()[0]
	spec := ds.Spec.Template.Spec
	c := containerNamed(t, ds, "node-problem-detector")
	if !slices.Equal(c.Command, []string{npdPath}) {
		t.Errorf("command %q, want %s", c.Command, npdPath)
	}
	cfg, ok := flagValue(c.Args, "--config.custom-plugin-monitor")
	if !ok {
		t.Fatalf("args %q: no --config.custom-plugin-monitor", c.Args)
	}
	vm := mountAt(c, filepath.Dir(cfg))
	if vm == nil {
		t.Fatalf("%s: its directory is not mounted", cfg)
	}
	var cmName string
	for _, v := range spec.Volumes {
		if v.Name == vm.Name && v.ConfigMap != nil && slices.ContainsFunc(v.ConfigMap.Items, func(k corev1.KeyToPath) bool { return k.Path == filepath.Base(cfg) }) {
			cmName = v.ConfigMap.Name
		}
	}
	var plugin string
	for _, cm := range find[*corev1.ConfigMap](m) {
		if cm.Name == cmName {
			plugin = cm.Data[filepath.Base(cfg)]
		}
	}
	if plugin == "" {
		t.Fatalf("%s: no ConfigMap in this file provides it (volume %s, ConfigMap %q)", cfg, vm.Name, cmName)
	}
	checkPluginConfig(t, plugin)
	if b, err := os.ReadFile(pluginConfigFile); err == nil {
		var shipped, configured any
		if err := json.Unmarshal(b, &shipped); err != nil {
			t.Fatalf("%s: %v", pluginConfigFile, err)
		}
		if err := json.Unmarshal([]byte(plugin), &configured); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(shipped, configured) {
			t.Errorf("ConfigMap %s differs from %s: copy the file into the ConfigMap", cmName, pluginConfigFile)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	} else {
		t.Logf("%s absent: the ConfigMap alone is checked", pluginConfigFile)
	}

	// npd names the node it patches from NODE_NAME and reaches the API server with the pod's token.
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}) {
		t.Error("NODE_NAME is not the pod's spec.nodeName")
	}
	if a := spec.AutomountServiceAccountToken; a != nil && !*a {
		t.Error("npd needs the service account token to patch the node's status")
	}
	bound := false
	for _, b := range find[*rbacv1.ClusterRoleBinding](m) {
		if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != "system:node-problem-detector" {
			continue
		}
		bound = bound || slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Name == spec.ServiceAccountName && s.Namespace == namespace
		})
	}
	if !bound {
		t.Errorf("ServiceAccount %s is not bound to ClusterRole system:node-problem-detector", spec.ServiceAccountName)
	}
	if !slices.ContainsFunc(find[*corev1.ServiceAccount](m), func(sa *corev1.ServiceAccount) bool { return sa.Name == spec.ServiceAccountName }) {
		t.Errorf("ServiceAccount %s is not defined in this file", spec.ServiceAccountName)
	}
}

// TestNamespacesAgree: each file is applied on its own, so each carries the Namespace; the
// copies must not disagree about its Pod Security level.
func TestNamespacesAgree(t *testing.T) {
	var first *corev1.Namespace
	for path, m := range load(t) {
		nss := find[*corev1.Namespace](m)
		if len(nss) != 1 || nss[0].Name != namespace {
			t.Errorf("%s: want the Namespace %s once", path, namespace)
			continue
		}
		if nss[0].Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
			t.Errorf("%s: namespace does not allow privileged pods (hostNetwork, hostPID, hostPath)", path)
		}
		if first == nil {
			first = nss[0]
		} else if !reflect.DeepEqual(first, nss[0]) {
			t.Errorf("%s: Namespace differs from the other manifest's", path)
		}
	}
}

// TestImagesMatchContainerfile: the images the manifests name are the Containerfile's targets,
// and the paths they run are where those targets install the binaries.
func TestImagesMatchContainerfile(t *testing.T) {
	b, err := os.ReadFile("../container/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	cf := string(b)
	images := map[string]string{ // image repository -> Containerfile target
		"registry.example.com/rdmadiag/rdmadiag":     "rdmadiag",
		"registry.example.com/rdmadiag/rdmadiag-npd": "npd",
	}
	for path, m := range load(t) {
		for _, c := range m.daemonSets()[0].Spec.Template.Spec.Containers {
			if !runsRdmadiag(c) {
				continue
			}
			repo, _, _ := strings.Cut(c.Image, ":")
			target, ok := images[repo]
			if !ok {
				t.Errorf("%s: container %s runs %s, not an image the Containerfile builds", path, c.Name, c.Image)
				continue
			}
			if !regexp.MustCompile(`(?m)^FROM \S+ AS ` + target + `$`).MatchString(cf) {
				t.Errorf("Containerfile has no target %s for %s", target, c.Image)
			}
		}
	}
	for _, dest := range []string{rdmadiagPath, npdPath} {
		if !regexp.MustCompile(`(?m)^COPY --from=\S+ \S+ ` + regexp.QuoteMeta(dest) + `$`).MatchString(cf) {
			t.Errorf("Containerfile installs nothing at %s", dest)
		}
	}
	if !bytes.Contains(b, []byte("make build")) {
		t.Error("Containerfile does not build with `make build` (CGO_ENABLED=0, as released)")
	}
}

// TestTextfileLoopScript runs the rdmadiag container's loop with a stand-in for rdmadiag: a
// verdict (exit 0-3) keeps the loop going, a usage error stops the container, and SIGTERM from
// the kubelet reaches a running check and ends the container cleanly.
func TestTextfileLoopScript(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh to run the script with")
	}
	rd := containerNamed(t, byFile(t, load(t), "rdmadiag-textfile.yaml").daemonSets()[0], "rdmadiag")
	dir := t.TempDir()
	stub := filepath.Join(dir, "rdmadiag")
	// The trap is set before the stand-in says it runs: the test signals as soon as it reads
	// "run", and a SIGTERM before the trap would end the stand-in without a word. Its sleep
	// holds none of the test's pipes, so that a slow kill of it cannot hold Wait.
	err := os.WriteFile(stub, []byte(`#!/bin/sh
trap 'echo TERM >> "$STUB_LOG"; kill $! 2>/dev/null; exit 130' TERM
echo "run $*" >> "$STUB_LOG"
sleep "$STUB_SLEEP" </dev/null >/dev/null 2>&1 & wait $!
exit "$STUB_RC"
`), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	script := strings.ReplaceAll(rd.Args[0], rdmadiagPath, stub)
	script = strings.ReplaceAll(script, "/run/rdmadiag/textfile", dir)
	wantArgs := "run check --no-probe --format prometheus --output " + dir + "/rdmadiag.prom"

	for _, tc := range []struct {
		name       string
		rc, sleep  string
		term       bool // send SIGTERM once the stand-in has run
		minRuns    int
		wantExit   int
		wantStubTE bool // the stand-in saw SIGTERM
		// anyTE: the signal may land while a stand-in runs (then it is forwarded) or between
		// runs; either is right.
		anyTE bool
	}{
		{name: "verdicts keep the loop going", rc: "2", sleep: "0", term: true, minRuns: 3, wantExit: 0, anyTE: true},
		{name: "usage error stops the container", rc: "64", sleep: "0", minRuns: 1, wantExit: 64},
		{name: "SIGTERM reaches a running check", rc: "0", sleep: "30", term: true, minRuns: 1, wantExit: 0, wantStubTE: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			cmd := exec.Command("/bin/sh", "-c", script)
			cmd.Env = append(os.Environ(), "INTERVAL_SECONDS=0.1", "STUB_LOG="+log, "STUB_RC="+tc.rc, "STUB_SLEEP="+tc.sleep)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.WaitDelay = time.Second // a stray grandchild holding stderr must not hang the test
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			runs := func() []string {
				b, _ := os.ReadFile(log)
				return slices.DeleteFunc(strings.Split(strings.TrimSpace(string(b)), "\n"), func(l string) bool { return !strings.HasPrefix(l, "run ") })
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(runs()) < tc.minRuns && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if tc.term {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			var werr error
			select {
			case werr = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("the loop did not end within 10s; stderr: %s", stderr.String())
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				code = ee.ExitCode()
			} else if werr != nil {
				t.Fatal(werr)
			}
			got := runs()
			if code != tc.wantExit || len(got) < tc.minRuns {
				t.Fatalf("exit %d after %d runs, want exit %d after at least %d; stderr: %s", code, len(got), tc.wantExit, tc.minRuns, stderr.String())
			}
			if tc.wantExit == 64 && len(got) != 1 {
				t.Errorf("%d runs after a usage error, want 1", len(got))
			}
			if got[0] != wantArgs {
				t.Errorf("ran %q, want %q", got[0], wantArgs)
			}
			b, _ := os.ReadFile(log)
			if sawTerm := strings.Contains(string(b), "TERM"); sawTerm != tc.wantStubTE && !tc.anyTE {
				t.Errorf("the running check saw SIGTERM: %v, want %v", sawTerm, tc.wantStubTE)
			}
		})
	}
}
