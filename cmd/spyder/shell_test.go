package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestApp_Help checks that `spyder help` and `spyder help run` show the
// help of the app and of run.
func TestApp_Help(t *testing.T) {
	if out := runApp(t, "help"); !strings.Contains(out, "COMMANDS:") || !strings.Contains(out, "completion") {
		t.Errorf("spyder help = %q, want the app's help listing its commands", out)
	}
	if out := runApp(t, "help", "run"); !strings.Contains(out, "spyder run - crawl") || !strings.Contains(out, "--concurrency") {
		t.Errorf("spyder help run = %q, want run's help", out)
	}
	if out := runApp(t, "queue", "help", "dead"); !strings.Contains(out, "purge") {
		t.Errorf("spyder queue help dead = %q, want dead's help", out)
	}
}

// TestApp_ConfigBadKeyOrValue checks that a key of a --config file that
// names no flag is a usage error naming the key and the file, with the flag
// it was probably meant to be, and that a value its flag cannot take is one
// naming the file, the line, the key and what it wants.
func TestApp_ConfigBadKeyOrValue(t *testing.T) {
	db, _ := mustSeededDB(t)
	tests := []struct{ name, yaml, want string }{
		{"Typo", "concurency: 64\n", `unknown key "concurency" (did you mean "concurrency"?)`},
		{"NoLikelyFlag", "db: x.db\nwhatever: 1\n", `unknown key "whatever"`},
		{"HiddenFlag", "fake-probe: true\n", `unknown key "fake-probe"`},
		{"NotAMap", "- a\n- b\n", "cannot unmarshal"},
		{"DurationWithoutUnit", "db: x.db\nhost-timeout: 30\n", `line 2: host-timeout: want a duration such as 30s or 2m, got "30"`},
		{"NotAWholeNumber", "concurrency: lots\n", `line 1: concurrency: want a whole number, got "lots"`},
		{"NotANumber", "rate: fast\n", `line 1: rate: want a number, got "fast"`},
		{"NotABool", "progress: maybe\n", `line 1: progress: want true or false, got "maybe"`},
		{"List", "resolver: [192.0.2.1, 192.0.2.2]\n", "line 1: resolver: want one value, not a list"},
		{"Empty", "db:\n", "line 1: db: want one value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := mustFile(t, "spyder.yaml", []byte(tt.yaml))
			_, _, err := tryApp(t.Context(), "run", "--db", db, "--config", path)
			if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "config file "+path+": ") ||
				!strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("run --config with %q: error %v, want one usage line naming %s and %q", tt.yaml, err, path, tt.want)
			}
		})
	}
}

// TestApp_ConfigShared checks that one --config file serves every command:
// a key of another command's flag is left to it (queue stats takes the db
// of a file that also sets run's concurrency); that a whole number is taken
// for a float flag (rate: -1 reaches run's bounds check, where the file's
// source would have refused an int for a float64); and that a string flag
// takes a value YAML reads as a number as written.
func TestApp_ConfigShared(t *testing.T) {
	db, _ := mustSeededDB(t)
	shared := mustFile(t, "spyder.yaml", []byte("db: "+db+"\nconcurrency: 4\nrate: 2\n"))
	if out, _, err := tryApp(t.Context(), "queue", "stats", "--config", shared); err != nil || !strings.Contains(out, "seen          2") {
		t.Errorf("queue stats with a file shared with run: %q, %v; want the stats of its db", out, err)
	}
	t.Setenv("SPYDER_CONFIG", shared)
	if out, _, err := tryApp(t.Context(), "queue", "dead", "list"); err != nil || !strings.Contains(out, "HOST") {
		t.Errorf("queue dead list with SPYDER_CONFIG shared with run: %q, %v", out, err)
	}
	numeric := mustFile(t, "num.yaml", []byte("db: 0700\n"))
	if _, _, err := tryApp(t.Context(), "queue", "stats", "--config", numeric); err == nil || !strings.Contains(err.Error(), "--db 0700 does not exist") {
		t.Errorf("db: 0700 in --config: %v, want it taken as the file name 0700", err)
	}
	negative := mustFile(t, "neg.yaml", []byte("rate: -1\n"))
	want := "--rate -1: want 0 (no limit) or more"
	if _, _, err := tryApp(t.Context(), "run", "--db", db, "--config", negative); err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), want) {
		t.Errorf("run with rate: -1 in --config: %v, want %q", err, want)
	}
}

// mustShell returns the path of shell, or skips the test when it is not
// installed; under make test (SPYDER_REQUIRE_TOOLS) or CI it fails instead
// (make deps installs bash, zsh and fish).
func mustShell(tb testing.TB, shell string) string {
	tb.Helper()
	p, err := exec.LookPath(shell)
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("SPYDER_REQUIRE_TOOLS") != "" {
			tb.Fatalf("%s is not installed (make deps installs it)", shell)
		}
		tb.Skipf("%s is not installed (make deps installs it)", shell)
	}
	return p
}

// shellEnv is the environment of a shell that finds the built spyder on
// its PATH, with a directory holding two files to complete.
func shellEnv(tb testing.TB) (env []string, dir string) {
	tb.Helper()
	dir = tb.TempDir()
	for _, f := range []string{"list.txt", "lost.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	env = append(os.Environ(), "PATH="+filepath.Dir(mustBinary(tb))+":"+os.Getenv("PATH"))
	return env, dir
}

// completionCases are command lines, the word under the cursor last, and
// what completing that word must offer.
var completionCases = []struct {
	words []string
	want  []string
}{
	{[]string{"spyder", ""}, []string{"completion", "graph", "help", "man", "queue", "robots", "run", "version"}},
	{[]string{"spyder", "qu"}, []string{"queue"}},
	{[]string{"spyder", "queue", "de"}, []string{"dead"}},
	{[]string{"spyder", "queue", "dead", ""}, []string{"help", "list", "purge", "retry"}},
	{[]string{"spyder", "run", "--con"}, []string{"--concurrency", "--config", "--continuous"}},
	{[]string{"spyder", "run", "--fa"}, nil}, // --fake-probe is hidden
	{[]string{"spyder", "run", "--domains", "l"}, []string{"list.txt", "lost.txt"}},
	{[]string{"spyder", "run", "--db", "x.db", "--out", "li"}, []string{"list.txt"}},
}

// TestBinary_CompletionBash sources `spyder completion bash` in a real bash
// and runs the completion function it registers for spyder.
func TestBinary_CompletionBash(t *testing.T) {
	t.Parallel()
	bash := mustShell(t, "bash")
	env, dir := shellEnv(t)
	for _, tc := range completionCases {
		script := `source <(spyder completion bash) || exit 1
fn=$(complete -p spyder | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
"$fn" spyder "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}" | sort`
		cmd := exec.Command(bash, append([]string{"-c", script, "bash"}, tc.words...)...)
		cmd.Env, cmd.Dir = env, dir
		checkCompletion(t, "bash", cmd, tc.words, tc.want)
	}
}

// TestBinary_CompletionFish loads `spyder completion fish` in a real fish
// and asks it to complete each command line.
func TestBinary_CompletionFish(t *testing.T) {
	t.Parallel()
	fish := mustShell(t, "fish")
	env, dir := shellEnv(t)
	for _, tc := range completionCases {
		line := strings.Join(tc.words, " ")
		cmd := exec.Command(fish, "--no-config", "-c", "spyder completion fish | source; complete -C $argv[1] | string replace -r '\\t.*' '' | sort", line)
		cmd.Env, cmd.Dir = append(env, "HOME="+t.TempDir()), dir
		checkCompletion(t, "fish", cmd, tc.words, tc.want)
	}
}

// zshDriver runs an interactive zsh in a pseudo-terminal (zsh/zpty) with
// the completion script loaded, types $1 and a Tab, and prints the line
// the completion left, after "BUF:".
const zshDriver = `zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z 'PS1="%% "; autoload -U compinit; compinit -u; source <(spyder completion zsh)'
zpty -wn z "$1"$'\t'
sleep 2
zpty -wn z $'\C-aprint -r -- BUF:\n'
sleep 1
out=""
while zpty -rt z chunk; do out+=$chunk; done
zpty -d z
print -r -- ${(M)${(f)out}:#BUF:*}`

// TestBinary_CompletionZsh types command lines into a real interactive
// zsh with the script loaded and checks what one Tab completes them to.
func TestBinary_CompletionZsh(t *testing.T) {
	t.Parallel()
	zsh := mustShell(t, "zsh")
	env, dir := shellEnv(t)
	for _, tc := range []struct{ typed, want string }{
		{"spyder qu", "spyder queue "},
		{"spyder queue de", "spyder queue dead "},
		{"spyder run --conc", "spyder run --concurrency "},
		{"spyder run --domains lis", "spyder run --domains list.txt "},
	} {
		cmd := exec.Command(zsh, "-f", "-c", zshDriver, "zsh", tc.typed)
		cmd.Env, cmd.Dir = env, dir
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("zsh completing %q: %v", tc.typed, err)
			continue
		}
		if got := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "BUF:")); got != strings.TrimSpace(tc.want) {
			t.Errorf("zsh completed %q to %q, want %q", tc.typed, got, tc.want)
		}
	}
}

func checkCompletion(tb testing.TB, shell string, cmd *exec.Cmd, words, want []string) {
	tb.Helper()
	out, err := cmd.Output()
	if err != nil {
		tb.Errorf("%s completing %q: %v", shell, words, err)
		return
	}
	got := strings.Fields(string(out))
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		tb.Errorf("%s completing %q (-want +got):\n%s", shell, words, diff)
	}
}

// TestBinary_ManPage renders `spyder man` with groff, whose warnings fail
// the test, and reads it with man: every command and visible flag of run
// is on the page.
func TestBinary_ManPage(t *testing.T) {
	t.Parallel()
	groff, man := mustShell(t, "groff"), mustShell(t, "man")
	page := filepath.Join(t.TempDir(), "spyder.1")
	out, err := exec.Command(mustBinary(t), "man").Output()
	if err != nil {
		t.Fatalf("spyder man: %v", err)
	}
	if err := os.WriteFile(page, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if warn, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", page).CombinedOutput(); err != nil || len(warn) > 0 {
		t.Errorf("groff -man -ww: %v\n%s", err, warn)
	}
	cmd := exec.Command(man, "-l", page)
	cmd.Env = append(os.Environ(), "MANPAGER=cat", "MANWIDTH=100", "LANG=C.UTF-8")
	text, err := cmd.Output()
	if err != nil {
		t.Fatalf("man -l: %v", err)
	}
	rendered := strings.ReplaceAll(string(text), "‐", "-")
	for _, want := range []string{"spyder", "run", "queue", "completion", "SYNOPSIS"} {
		if !strings.Contains(rendered, want) {
			t.Errorf("the man page does not mention %q", want)
		}
	}
	for _, f := range runCommand().VisibleFlags() {
		if name := "--" + f.Names()[0]; !strings.Contains(rendered, name) {
			t.Errorf("the man page does not mention %s", name)
		}
	}
}
