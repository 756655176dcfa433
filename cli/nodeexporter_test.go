package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The real client: the distribution's node_exporter reads rdmadiag's file from its textfile
// directory and serves it without a scrape error. CI installs prometheus-node-exporter (.ci/run)
// and must run this test; elsewhere it is skipped when the program is missing.
func TestNodeExporterScrapesTheTextfile(t *testing.T) {
	bin, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus-node-exporter is not installed; .ci/run installs it")
		}
		t.Skip("prometheus-node-exporter is not installed (Debian: apt-get install prometheus-node-exporter)")
	}
	dir := t.TempDir()
	prom := filepath.Join(dir, "rdmadiag.prom")
	// A real clock, so the run's duration and start time are written too.
	var out, errb bytes.Buffer
	app := &App{Version: "test", Now: time.Now, Stdout: &out, Stderr: &errb}
	if code := app.Execute(context.Background(), []string{"check", "--snapshot", fixture("port-down"), "--format", "prometheus", "--output", prom}); code != 2 {
		t.Fatalf("rdmadiag: exit %d, %s", code, errb.String())
	}

	addr := "127.0.0.1:" + freePort(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--collector.disable-defaults", "--collector.textfile", "--collector.textfile.directory", dir,
		"--web.listen-address", addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})

	body := scrape(t, "http://"+addr+"/metrics", &logs)
	mfs := parseExposition(t, body)
	if m := sample(mfs, "node_textfile_scrape_error", map[string]string{}); m == nil || m.GetGauge().GetValue() != 0 {
		t.Errorf("node_textfile_scrape_error: %v\nexporter log:\n%s", m, logs.String())
	}
	if m := sample(mfs, "node_textfile_mtime_seconds", map[string]string{"file": prom}); m == nil {
		// node_exporter 1.5 labels the file with its full path; later releases with its name.
		if m = sample(mfs, "node_textfile_mtime_seconds", map[string]string{"file": "rdmadiag.prom"}); m == nil {
			t.Errorf("node_textfile_mtime_seconds does not name rdmadiag.prom:\n%s", body)
		}
	}
	if m := sample(mfs, "rdmadiag_finding", map[string]string{"check": "port.state", "layer": "port", "subject": "rxe0/1",
		"device": "rxe0", "severity": "critical", "root_cause": "true"}); m == nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("the port.state finding is not served:\n%s", body)
	}
	for _, name := range []string{"rdmadiag_findings", "rdmadiag_verdict", "rdmadiag_exit_code", "rdmadiag_run_duration_seconds",
		"rdmadiag_run_start_timestamp_seconds", "rdmadiag_build_info"} {
		if len(mfs[name].GetMetric()) == 0 {
			t.Errorf("%s is not served", name)
		}
	}
	if m := sample(mfs, "rdmadiag_verdict", map[string]string{"verdict": "critical"}); m == nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("rdmadiag_verdict{verdict=\"critical\"}: %v", m)
	}
}

// freePort asks the kernel for a loopback port no one listens on.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// scrape fetches the exposition as Prometheus would, waiting up to 15 s for the exporter to listen.
func scrape(t *testing.T, url string, logs *bytes.Buffer) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(b)
			}
			err = rerr
			if err == nil {
				err = &httpStatus{resp.Status}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("scrape %s: %v\nexporter log:\n%s", url, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type httpStatus struct{ s string }

func (h *httpStatus) Error() string { return "HTTP " + h.s }
