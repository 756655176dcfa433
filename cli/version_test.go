package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func stampedApp(out, errb *bytes.Buffer) *App {
	return &App{Version: "v1.4.0", Commit: "0123abcd", BuildDate: "2026-03-04T05:06:07Z", Now: time.Now, Stdout: out, Stderr: errb}
}

func TestVersionCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := stampedApp(&out, &errb).Execute(context.Background(), []string{"version"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "rdmadiag v1.4.0\ncommit:     0123abcd\nbuild date: 2026-03-04T05:06:07Z\ngo:         " +
		runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if out.String() != want {
		t.Errorf("version:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if code := stampedApp(&out, &errb).Execute(context.Background(), []string{"version", "--format", "json"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var v map[string]string
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	for k, w := range map[string]string{"name": "rdmadiag", "version": "v1.4.0", "commit": "0123abcd",
		"build_date": "2026-03-04T05:06:07Z", "go_version": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH} {
		if v[k] != w {
			t.Errorf("json %s = %q, want %q", k, v[k], w)
		}
	}

	// An unstamped build says what it does not know, and keeps every JSON key.
	out.Reset()
	bare := &App{Version: "dev", Now: time.Now, Stdout: &out, Stderr: &errb}
	if code := bare.Execute(context.Background(), []string{"version", "--format", "json"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if s := out.String(); !strings.Contains(s, `"commit": ""`) || !strings.Contains(s, `"build_date": ""`) {
		t.Errorf("unstamped json lacks empty keys: %s", s)
	}
	out.Reset()
	bare.Execute(context.Background(), []string{"version"})
	if !strings.Contains(out.String(), "commit:     unknown\nbuild date: unknown\n") {
		t.Errorf("unstamped table: %s", out.String())
	}

	// --version stays the short form.
	out.Reset()
	if code := stampedApp(&out, &errb).Execute(context.Background(), []string{"--version"}); code != 0 || out.String() != "rdmadiag version v1.4.0\n" {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}

	for _, args := range [][]string{{"version", "--format", "yaml"}, {"version", "extra"}} {
		out.Reset()
		errb.Reset()
		if code := stampedApp(&out, &errb).Execute(context.Background(), args); code != 64 || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q; want 64 and nothing", args, code, out.String())
		}
	}
}

func TestReportCarriesCommit(t *testing.T) {
	var out, errb bytes.Buffer
	code := stampedApp(&out, &errb).Execute(context.Background(), []string{"check", "--snapshot", fixturesDir + "/aer/snapshot.txtar", "--format", "json"})
	if code != 2 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	r := decode(t, out.String())
	if r.Tool.Version != "v1.4.0" || r.Tool.Commit != "0123abcd" {
		t.Errorf("tool = %+v, want version v1.4.0 and commit 0123abcd", r.Tool)
	}
}

func TestStamps(t *testing.T) {
	info := func(v string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/rdmadiag/rdmadiag", Version: v}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, c := range []struct {
		name                string
		version, commit, dt string
		info                func() (*debug.BuildInfo, bool)
		want                [3]string
	}{
		{"ldflags win", "v2.0.0", "feed", "2026-01-01T00:00:00Z", info("v1.0.0", "vcs.revision", "beef"), [3]string{"v2.0.0", "feed", "2026-01-01T00:00:00Z"}},
		{"go install module@version", "dev", "", "", info("v1.3.0"), [3]string{"v1.3.0", "", ""}},
		{"checkout with vcs stamping", "dev", "", "", info("(devel)", "vcs.revision", "abc123", "vcs.time", "2026-01-01T00:00:00Z"), [3]string{"dev", "abc123", ""}},
		{"modified checkout", "dev", "", "", info("v1.3.1-0.20260101000000-abc123+dirty", "vcs.revision", "abc123", "vcs.modified", "true"),
			[3]string{"v1.3.1-0.20260101000000-abc123+dirty", "abc123-dirty", ""}},
		{"no build info", "dev", "", "", none, [3]string{"dev", "", ""}},
	} {
		v, cm, d := stamps(c.version, c.commit, c.dt, c.info)
		if got := [3]string{v, cm, d}; got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
