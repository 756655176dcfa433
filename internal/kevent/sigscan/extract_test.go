package sigscan

import (
	"fmt"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // "func|level|prefix|format", or "func|level|!reason"
	}{
		{"concatenation", `
static int f(struct device *d)
{
	dev_err(d, "first part, "
		   "second part %d\n", 3);
}`, []string{"f|err||first part, second part %d"}},
		{"escaped quotes and backslash", `
void g(void) { pr_warn("a \"quoted\" word \\ and tab\t\n"); }`, []string{"g|warn||a \"quoted\" word \\ and tab\t"}},
		{"comments between parts", `
void h(void) { netdev_err(nd, "one " /* note */ "two" // end
 "\n"); }`, []string{"h|err||one two"}},
		{"pr_fmt with the module", `
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt
void f(void) { pr_err("bad thing %s\n", x); }`, []string{"f|err|rdma_rxe: |bad thing %s"}},
		{"pr_fmt with the function", `
#define DRV "mlx4_ib"
#define pr_fmt(fmt) "<" DRV "> %s: " fmt, __func__
void f(void) { pr_warn("oops\n"); }`, []string{"f|warn|<mlx4_ib> %s: |oops"}},
		{"wrapper with a function-like macro of literals in its format", `
#define pr_fmt(fmt) "DMA-API: " fmt
#define err_printk(dev, entry, format, arg...) do {	\
		WARN(1, pr_fmt("%s %s: ") format,	\
		     dev_driver_string(dev), dev_name(dev), ## arg);	\
	} while (0);
void check_unmap(struct device *dev)
{
	err_printk(dev, NULL, "device driver tries to free an invalid DMA memory address\n");
}`, []string{"check_unmap|warn|DMA-API: %s %s: |device driver tries to free an invalid DMA memory address"}},
		{"wrapper macro across lines", `
#define my_err(__dev, format, ...)			\
	dev_err((__dev)->device, "%s:%d:(pid %d): " format,	\
		__func__, __LINE__, current->pid,		\
		##__VA_ARGS__)
#define my_qos(mdev, fmt, ...) my_err(mdev, "QoS: " fmt, ##__VA_ARGS__)
int probe(struct x *dev)
{
	if (a)
		my_err(dev,
		       "failed to %s, err = %d\n",
		       "do", -1);
	my_qos(dev, "bad\n");
}`, []string{"probe|err|%s:%d:(pid %d): |failed to %s, err = %d", "probe|err|%s:%d:(pid %d): QoS: |bad"}},
		{"level from the call", `
#define lg(__dev, level, format, ...) mlx5_printk(__dev, level, "%s: " format, __func__, ##__VA_ARGS__)
void f(void) { lg(d, LOGLEVEL_WARNING, "w\n"); lg(d, sev, "v\n"); printk(KERN_CRIT "c\n"); }`,
			[]string{"f|warn|%s: |w", "f||%s: |v", "f|crit||c"}},
		{"printk with a level parameter", `
#define ip_printk(level, priv, format, arg...) printk(level "%s: " format, ((struct p *) priv)->dev->name , ## arg)
#define ip_warn(priv, format, arg...) do { if (1) ip_printk(KERN_WARNING, priv, format , ## arg); } while (0)
void f(void) { ip_warn(p, "multicast join failed for %pI6, status %d\n", g, s); }`,
			[]string{"f|warn|%s: |multicast join failed for %pI6, status %d"}},
		{"format is a variable", `
void f(void) { dev_err(d, msg); mlx5_core_err(d); }`, []string{"f|err|!format names msg"}},
		{"object macro format", `
#define MSG "from a macro "
void f(void) { pr_err(MSG "and a literal\n"); }`, []string{"f|err||from a macro and a literal"}},
		{"definition is no call", `
void en_print(const char *level, const char *format, ...)
{
	printk("%s%s: %pV", level, DRV_NAME, &vaf);
}`, []string{"en_print|||%s%s: %pV"}},
		{"function after a struct", `
static const struct s t[] = { { .a = 1 }, };
static int __init mod_init(void) { pr_crit("x %d\n", 1); }`, []string{"mod_init|crit||x %d"}},
		{"unterminated", `void f(void) { pr_err("never closed`, []string{"f|err||never closed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range ExtractFile("x.c", []byte(tc.src), "rdma_rxe") {
				if p.Unresolved != "" {
					got = append(got, p.Func+"|"+p.Level+"|!"+p.Unresolved)
					continue
				}
				got = append(got, p.Func+"|"+p.Level+"|"+p.Prefix+"|"+p.Format)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestMessageAndPrefix(t *testing.T) {
	mlx5Err := func(format string, args ...string) Print {
		return Print{Func: "mlx5_cmd_check", Line: 800, Format: format, Args: args, Prefix: "%s:%d:(pid %d): ", PrefixArgs: []string{"__func__", "__LINE__", "current->pid"}}
	}
	for _, tc := range []struct {
		p            Print
		message, pre string
		values       string
	}{
		// The table matches one record: the first line.
		{mlx5Err("first line of it\nsecond"), "first line of it", "mlx5_cmd_check:800:(pid 17): ", ""},
		// Too short alone: the macro's text with the function named is kept.
		{mlx5Err("start"), "%s:%d:(pid %d): start", "", "1=mlx5_cmd_check"},
		{mlx5Err("%s: failed to do it, %d", "__func__", "err"), "%s: failed to do it, %d", "mlx5_cmd_check:800:(pid 17): ", "1=mlx5_cmd_check"},
		{Print{Format: "failed", Prefix: "E-Switch: "}, "E-Switch: failed", "", ""},
	} {
		msg, values := tc.p.Entry()
		var vs []string
		for i := 1; i <= 9; i++ {
			if v, ok := values[i]; ok {
				vs = append(vs, fmt.Sprintf("%d=%s", i, strings.Join(v, ",")))
			}
		}
		if msg != tc.message || renderPrefix(&tc.p) != tc.pre || strings.Join(vs, " ") != tc.values {
			t.Errorf("%q: got %q, prefix %q, values %q; want %q, %q, %q", tc.p.Format, msg, renderPrefix(&tc.p), vs, tc.message, tc.pre, tc.values)
		}
	}
}

// FuzzExtract: the extractor reads untrusted text; any input is read without a panic or a
// hang, and each print it finds has a line within the input.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		"void f(void) { dev_err(d, \"a\" \"b\\n\"); }",
		"#define pr_fmt(fmt) \"x: \" fmt\nvoid f() { pr_err(\"y\"); }",
		"#define w(d, f, ...) dev_warn(d, \"p \" f, ##__VA_ARGS__)\nint g() { w(d, \"z %d\", 1); }",
		"void f() { pr_err(\"\\x41\\101\\",
		"#define a(x) a(x)\nvoid f() { a(\"\"); }",
		"{{{{ pr_err( ( [ \" ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		lines := strings.Count(src, "\n") + 1
		for _, p := range ExtractFile("fuzz.c", []byte(src), "m") {
			if p.Line < 1 || p.Line > lines {
				t.Fatalf("print at line %d of %d", p.Line, lines)
			}
			_ = p.Message()
			_ = renderPrefix(&p)
		}
	})
}

// smbdirect.c's log_rdma() prints at err whatever its level word, but INFO only when a module
// parameter asks: read as its own printer there, ERR is err and INFO info. Elsewhere a macro of
// that name is read from its body.
func TestMacroPrinters(t *testing.T) {
	src := `
#define pr_fmt(fmt) "CIFS: " fmt
#define log_rdma(level, class, fmt, args...) do { \
	if (level <= smbd_logging_level || class & smbd_logging_class) \
		cifs_dbg(VFS, "%s:%d " fmt, __func__, __LINE__, ##args); \
} while (0)
#define log_rdma_event(level, fmt, args...) log_rdma(level, LOG_RDMA_EVENT, fmt, ##args)
static int smbd_ia_open(void)
{
	log_rdma_event(ERR, "rdma_create_qp failed %i\n", rc);
	log_rdma_event(INFO, "rdma_connect connected\n");
}`
	var got []string
	for _, p := range ExtractFile("fs/smb/client/smbdirect.c", []byte(src), "cifs") {
		got = append(got, p.Level+"|"+p.Prefix+"|"+p.Format)
	}
	want := []string{"err|CIFS: VFS: %s:%d |rdma_create_qp failed %i", "info|CIFS: VFS: %s:%d |rdma_connect connected"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("smbdirect.c: got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if ps := ExtractFile("other.c", []byte(src), "cifs"); len(ps) != 0 {
		t.Errorf("other.c: log_rdma read as smbdirect.c's printer: %+v", ps)
	}
}

// A print through dev_err_ratelimited, directly or by a driver's macro, is marked ratelimited:
// the kernel names its function when it drops lines.
func TestRatelimitedPrints(t *testing.T) {
	src := `
#define mlx5_core_err_rl(__dev, format, ...) dev_err_ratelimited((__dev)->device, "%s:%d:(pid %d): " format, __func__, __LINE__, current->pid, ##__VA_ARGS__)
void mlx5_cmd_out_err(struct mlx5_core_dev *dev) { mlx5_core_err_rl(dev, "%s(0x%x) failed, status %s(0x%x)\n", a, b, c, d); }
void g(struct device *d) { dev_err(d, "plain failure %d\n", 1); pr_warn_ratelimited("bad cqe %d\n", 2); }`
	var got []string
	for _, p := range ExtractFile("cmd.c", []byte(src), "mlx5_core") {
		got = append(got, fmt.Sprintf("%s %v", p.Func, p.Ratelimited))
	}
	if want := "mlx5_cmd_out_err true|g false|g true"; strings.Join(got, "|") != want {
		t.Errorf("got %q, want %q", strings.Join(got, "|"), want)
	}
}
