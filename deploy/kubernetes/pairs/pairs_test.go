// Package pairs holds the Indexed Job that runs rdmadiag's pair probes across a cluster. The test
// decodes it strictly with the Kubernetes API types and checks the wiring the pods rely on to
// find each other, then runs the pods' script (with stand-ins for the probe) for every index.
package pairs

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func objects(t *testing.T) []runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	d := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
	f, err := os.Open("rdmadiag-pairs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if j, _ := yaml.YAMLToJSON(doc); string(j) == "null" {
			continue
		}
		obj, _, err := d.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("document %d: %v", len(out)+1, err)
		}
		out = append(out, obj)
	}
}

func TestIndexedJobWiring(t *testing.T) {
	var job *batchv1.Job
	var svc *corev1.Service
	for _, o := range objects(t) {
		switch v := o.(type) {
		case *batchv1.Job:
			job = v
		case *corev1.Service:
			svc = v
		}
	}
	if job == nil || svc == nil {
		t.Fatal("want a Job and a Service")
	}
	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		t.Error("the Job is not Indexed: pods would not know their index")
	}
	if spec.Completions == nil || spec.Parallelism == nil || *spec.Completions != *spec.Parallelism {
		t.Error("completions and parallelism differ: a pod's partner might never start")
	}
	pod := spec.Template.Spec
	if pod.Subdomain != svc.Name || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("subdomain %q, Service %s clusterIP %q publishNotReady %v: pods cannot find each other by name", pod.Subdomain, svc.Name, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
	}
	if svc.Spec.Selector["job-name"] != job.Name {
		t.Errorf("the Service selects %v, not the Job's pods", svc.Spec.Selector)
	}
	c := pod.Containers[0]
	var pairs string
	for _, e := range c.Env {
		if e.Name == "PAIRS" {
			pairs = e.Value
		}
	}
	if pairs != strconv.Itoa(int(*spec.Completions)) {
		t.Errorf("PAIRS=%s but %d completions: the plan would name pods that do not exist", pairs, *spec.Completions)
	}
	if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil {
		t.Error("no anti-affinity: two pods on one node would probe the node with itself")
	}
	// Run the pods' script for each index with a stand-in that prints the role it was given.
	dir := t.TempDir()
	stub := filepath.Join(dir, "rdmadiag")
	script := "#!/bin/sh\ncase \"$1 $2\" in \"probe plan\") exec " + realRdmadiag(t, dir) + " \"$@\";; esac\necho \"$@\"\n"
	if err := os.WriteFile(stub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(c.Command[2], "/usr/local/bin/rdmadiag", stub)
	roles := map[string]int{}
	for i := 0; i < int(*spec.Completions); i++ {
		cmd := exec.Command("/bin/sh", "-c", body)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "PAIRS=" + pairs, "ROUNDS=3", "RDMADIAG_DEVICE=", "JOB_COMPLETION_INDEX=" + strconv.Itoa(i)}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("index %d: %v\n%s", i, err, out)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 || f[0] != "probe" {
				t.Fatalf("index %d ran %q", i, l)
			}
			roles[f[1]]++
		}
	}
	// 4 pods, 3 rounds, 2 pairs a round: 6 listeners and 6 dialling ends.
	if roles["--listen"] != 6 || roles["--peer"] != 6 {
		t.Errorf("roles %v, want 6 --listen and 6 --peer", roles)
	}
}

func realRdmadiag(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "rdmadiag-real")
	build := exec.Command("go", "build", "-o", bin, "./cmd/rdmadiag")
	build.Dir = "../../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
