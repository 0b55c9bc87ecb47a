package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// signZone signs z with keys of its own (a KSK and a ZSK, ECDSA P-256, made
// by BIND's dnssec-keygen; dnssec-signzone signs) kept under dir, and
// returns the signed zone file and the DS record its parent publishes.
// With z.BadDS the DS names a key that signs nothing, so a validating
// resolver finds the zone bogus.
func signZone(tb testing.TB, dir string, z Zone) (signed, ds string) {
	tb.Helper()
	origin := strings.TrimSuffix(z.Apex, ".") + "."
	kdir := filepath.Join(dir, "keys", zoneFile(z.Apex))
	keygen := func(kdir string, args ...string) string {
		if err := os.MkdirAll(kdir, 0o755); err != nil {
			tb.Fatal(err)
		}
		args = append([]string{"-q", "-K", kdir, "-a", "ECDSAP256SHA256", "-n", "ZONE"}, args...)
		return filepath.Join(kdir, run(tb, "dnssec-keygen", append(args, origin)...))
	}
	ksk := keygen(kdir, "-f", "KSK")
	keygen(kdir)
	in := writeFile(tb, kdir, "zone", []byte(zoneText(z)))
	out := in + ".signed"
	run(tb, "dnssec-signzone", "-q", "-S", "-K", kdir, "-d", kdir, "-o", origin, "-f", out, in)
	if z.BadDS {
		ksk = keygen(filepath.Join(kdir, "unused"), "-f", "KSK")
	}
	ds = run(tb, "dnssec-dsfromkey", "-2", ksk+".key")
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b), ds
}

// run runs prog and returns its output, trimmed; it fails tb with the
// output if prog fails.
func run(tb testing.TB, prog string, args ...string) string {
	tb.Helper()
	out, err := exec.Command(prog, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		tb.Fatalf("interop: %s %s: %v\n%s", prog, strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(string(out))
}
