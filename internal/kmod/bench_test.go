package kmod

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"
)

// distroConfig is shaped like a distribution kernel's config: about 10,000 options set, 1,500
// "is not set" lines and section comments (Debian 12's config-6.1 has 9,700 and 1,400).
func distroConfig() []byte {
	var b bytes.Buffer
	b.WriteString("#\n# Automatically generated file; DO NOT EDIT.\n#\n")
	for i := range 11500 {
		switch {
		case i%100 == 0:
			fmt.Fprintf(&b, "\n#\n# Section %d\n#\n", i/100)
		case i%8 == 0:
			fmt.Fprintf(&b, "# CONFIG_OPTION_%d is not set\n", i)
		case i%3 == 0:
			fmt.Fprintf(&b, "CONFIG_OPTION_%d=m\n", i)
		case i%5 == 0:
			fmt.Fprintf(&b, "CONFIG_OPTION_%d=\"value %d\"\n", i, i)
		default:
			fmt.Fprintf(&b, "CONFIG_OPTION_%d=y\n", i)
		}
	}
	return b.Bytes()
}

func BenchmarkParseConfig(b *testing.B) {
	plain := distroConfig()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	for name, c := range map[string]struct {
		b  []byte
		gz bool
	}{"boot-config": {plain, false}, "proc-config.gz": {gz.Bytes(), true}} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			for b.Loop() {
				if cfg, err := ParseConfig(c.b, c.gz); err != nil || len(cfg) < 9000 {
					b.Fatal(len(cfg), err)
				}
			}
		})
	}
}
