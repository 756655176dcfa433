package watch

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A real Prometheus server scrapes the endpoint and answers a query on a condition gauge.
// Opt-in (RDMADIAG_PROMETHEUS=1): it needs /usr/bin/prometheus (Debian package prometheus) and
// takes some seconds.
func TestWatchPrometheusScrape(t *testing.T) {
	if os.Getenv("RDMADIAG_PROMETHEUS") != "1" {
		t.Skip("set RDMADIAG_PROMETHEUS=1 to run a Prometheus server against the endpoint")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("no prometheus binary (apt-get install prometheus):", err)
	}
	root := tree(t, "b1")
	r := start(t, Config{Root: root, ExpectUp: expectAll, Listen: "127.0.0.1:0"})
	r.ev.wait(t, 2*time.Second, "port_down", is(EvSet, CondPortDown, mlx5_1Port))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	write(t, cfg, fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: rdmadiag\n    static_configs:\n      - targets: ['%s']\n", r.w.Addr()))
	web := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+web)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	q := "http://" + web + "/api/v1/query?query=" + url.QueryEscape(`rdmadiag_watch_condition{condition="port_down",identity="`+mlx5_1Port+`"}`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		resp, err := http.Get(q)
		if err != nil {
			continue
		}
		var body struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
				} `json:"result"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err == nil && body.Status == "success" && len(body.Data.Result) == 1 {
			if m := body.Data.Result[0].Metric; m["device"] != "mlx5_1" || m["severity"] != "warning" {
				t.Fatalf("scraped %v", m)
			}
			return
		}
	}
	t.Fatal("Prometheus did not return the condition within 30 s")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
